package k8sstore_test

// Attack: the record test is evaluated on the API server's watch cache,
// not on etcd. kube-apiserver's PATCH goes through the cacher's
// GuaranteedUpdate (k8s.io/apiserver pkg/storage/cacher/delegator.go),
// which hands etcd3's GuaranteedUpdate the object from its watch cache as
// cachedExistingObject; the JSON patch — its test operations included —
// is applied to that cached object, and the only compare made against
// etcd is the OptimisticPut's ModRevision == the cached object's
// resourceVersion. The store's premise (doc.go, fence_k8srecord.go: "a
// patch applied to a stale cached copy is applied again to the current
// one") holds only while revisions never repeat — exactly what a restore
// without --bump-revision breaks, the case the record test exists for.
//
// When etcd is restored under a running API server (no restart of it: an
// operator who skips the documented restart, or one API server of several
// it missed), the watch cache keeps the objects it saw before the restore,
// and its watch resumes from the revision it had reached, so every write
// made after the restore at a revision it had already passed is never
// delivered to it. A write planned before the restore on (X, S) then has
// its tests checked against the cache's (X, S) — they pass — and commits
// on whatever etcd holds at ModRevision X: another holder's live lease.
//
// The play: W claims 5; the copy is taken; W is cut off, and A claims 5
// over W's expired lease and renews to resourceVersion X (record S). A's
// next renewal has read (X, S) and is held. etcd is restored under the
// running API server: 5 is back to W's record. W, which saw nothing of
// A, renews on its restored record (no sign shows: it sees what it last
// saw) and is acknowledged; its write lands at revision X. A's held patch
// goes out: it tests X and S, which the cache still holds, and etcd's 5 is
// at ModRevision X: it commits over W's live, acknowledged lease.
//
// The store cannot refuse that write: every test it can put in the patch
// is checked against the same cached object. What keeps the holders apart
// is the restore made as Kubernetes documents it — the API servers
// stopped while etcd is restored (their caches made anew: the control
// below), or a --bump-revision past every revision issued since the copy,
// so that no revision repeats and the cached one never matches etcd's
// (TestStaleRenewalThroughWatchCacheRefusedAfterBump) — and the runbook's
// raise-marks before the holders renew; docs/lease-stores.md says so. The
// play without either (branch k8sreview, TestAttackStaleRenewalThroughWatchCache)
// commits A's patch over W's acknowledged renewal; W resuming at once on a
// lease that lapsed is the keeper's to refuse (the next issue).

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
)

// TestStaleRenewalThroughWatchCacheRefusedAfterBump: the play with etcd
// restored under the running API server, its watch cache left stale, but
// with --bump-revision: W's renewal lands at a revision above any the
// cache holds, so A's held patch, whose tests pass on the cached object,
// fails the compare with etcd's revision, is tried again on etcd's object
// and refused by its record test.
func TestStaleRenewalThroughWatchCacheRefusedAfterBump(t *testing.T) {
	staleRenewalOverResumedHolder(t, k8stest.RestoreOptions{UnderRunningAPIServer: true, RevisionBump: 1_000_000})
}

// TestStaleRenewalOverResumedHolderRefused is the control: the same play
// with the restore the kit makes by default (the API server stopped and
// started again, its watch cache made anew from etcd) — A's held patch is
// refused by its record test, so the duplicate above is the watch cache's.
func TestStaleRenewalOverResumedHolderRefused(t *testing.T) {
	staleRenewalOverResumedHolder(t, k8stest.RestoreOptions{})
}

// staleRenewalOverResumedHolder plays the attack with the restore opts.
func staleRenewalOverResumedHolder(t *testing.T, opts k8stest.RestoreOptions) {
	srv := k8stest.Start(t)
	ns := srv.Namespace(t)
	leases := srv.Clientset(t).CoordinationV1().Leases(ns)
	now := time.Now().UnixMilli()
	cfg := k8sstore.Config{Namespace: ns, Clock: fakeclock.New(time.UnixMilli(now))}
	p := newParker(t)
	rcA := srv.Config()
	rcA.Wrap(p.wrap)
	a := open(t, rcA, cfg)
	w := open(t, srv.Config(), cfg)
	name := "snowfence-r0-5"
	objRV := func() (uint64, string) {
		l, err := leases.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		return rvOf(t, l.ResourceVersion), l.Annotations["snowfence.io/record"]
	}
	listed := func() string { // a consistent list: served from the watch cache
		ls, err := leases.List(t.Context(), metav1.ListOptions{LabelSelector: "snowfence.io/prefix=snowfence"})
		if err != nil {
			return err.Error()
		}
		for _, l := range ls.Items {
			if l.Name == name {
				return l.ResourceVersion + " " + l.Annotations["snowfence.io/record"]
			}
		}
		return "absent"
	}

	// W holds 5; the copy is taken.
	lw := mustClaim(t, w, on("w", 5, now))
	cp := srv.CopyData(t)
	copied, _ := objRV()
	pumpUntil(t, leases, copied+200) // room for what the API server writes after the restore

	// W is cut off; A claims 5 over W's expired lease and renews.
	la := mustClaim(t, a, on("a", 5, now+10_001))
	la = mustExtend(t, a, la, now+30_000)

	// A's next renewal reads (X, S) and is held before its patch.
	p.armed.Store(true)
	out := make(chan error, 1)
	go func() {
		_, err := a.Extend(context.WithoutCancel(t.Context()), la, now+40_000, 10*time.Second)
		out <- err
	}()
	select {
	case <-p.parked:
	case <-time.After(30 * time.Second):
		t.Fatal("A's renewal never reached its patch")
	}
	x, planned := objRV()
	t.Logf("A's renewal is held: planned on resourceVersion %d, record %s", x, planned)

	srv.RestoreWith(t, cp, opts)
	back, rec := objRV()
	t.Logf("restored (%+v): etcd has %s at resourceVersion %d: %s", opts, name, back, rec)
	t.Logf("a consistent list (the watch cache) shows %s at %s", name, listed())

	// W renews on its restored record; its write is made to land at X
	// (unless the restore bumped the revision past it: then anywhere).
	if opts.RevisionBump == 0 {
		if rv := pumpUntil(t, leases, x-1); rv != x-1 {
			t.Fatalf("the revision went to %d past %d: another writer moved it; run again", rv, x-1)
		}
	}
	lw = mustExtend(t, w, lw, now+40_000)
	if rv, rec := objRV(); opts.RevisionBump == 0 && rv != x {
		t.Fatalf("W's renewal was given resourceVersion %d, not the %d A planned on: another writer (the API server's own "+
			"lease) moved etcd's revision between; run again", rv, x)
	} else {
		t.Logf("W holds 5 (epoch %d, start %d, acknowledged mark %d) at resourceVersion %d: %s", lw.Token, lw.StartMs, lw.MarkMs, rv, rec)
	}
	t.Logf("the watch cache still shows %s at %s", name, listed())

	// A's held patch goes out.
	p.let()
	var status string
	select {
	case status = <-p.status:
	case <-time.After(time.Minute):
		t.Fatal("A's held patch never went out")
	}
	var aerr error
	select {
	case aerr = <-out:
	case <-time.After(time.Minute):
		t.Fatal("A's renewal never returned")
	}
	_, after := objRV()
	t.Logf("A's held patch: %s; A's renewal: %v; the object now holds %s", status, aerr, after)
	if aerr == nil || strings.HasPrefix(status, "2") {
		_, werr := w.Extend(t.Context(), lw, now+41_000, 10*time.Second)
		t.Errorf("DUPLICATE WINDOW: A's renewal planned before the restore (epoch %d, to mark %d) committed (%s) over W's live lease "+
			"(epoch %d, acknowledged mark %d after the restore): its record test passed on the watch cache's copy of the object, and "+
			"etcd's object was at the resourceVersion it tested; both issue on 5 up to their marks; the object now holds %s; W's next "+
			"renewal: %v", la.Token, now+40_000, status, lw.Token, lw.MarkMs, after, werr)
	}
}

// TestAttackStaleClaimThroughWatchCache: the same restore under a running
// API server, with no request held anywhere: a fresh claimer's List is a
// consistent list, served from the watch cache (the cache's revision is
// above etcd's restored one, so it counts as fresh), and shows A's
// lost-history record, expired by the claimer's clock. Its claim patch
// tests that record and its resourceVersion X — on the cache, where they
// pass — and commits on etcd's object at ModRevision X: W's live lease,
// renewed after the restore to a mark past the claim's start.
func TestAttackStaleClaimThroughWatchCache(t *testing.T) {
	srv := k8stest.Start(t)
	ns := srv.Namespace(t)
	leases := srv.Clientset(t).CoordinationV1().Leases(ns)
	now := time.Now().UnixMilli()
	cfg := k8sstore.Config{Namespace: ns, Clock: fakeclock.New(time.UnixMilli(now))}
	a := open(t, srv.Config(), cfg)
	w := open(t, srv.Config(), cfg)
	name := "snowfence-r0-5"
	objRV := func() (uint64, string) {
		l, err := leases.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		return rvOf(t, l.ResourceVersion), l.Annotations["snowfence.io/record"]
	}

	lw := mustClaim(t, w, on("w", 5, now))
	cp := srv.CopyData(t)
	copied, _ := objRV()
	pumpUntil(t, leases, copied+200)
	la := mustClaim(t, a, on("a", 5, now+10_001))
	la = mustExtend(t, a, la, now+30_000)
	x, _ := objRV()
	t.Logf("A holds 5 (epoch %d, mark %d) at resourceVersion %d", la.Token, la.MarkMs, x)

	srv.RestoreWith(t, cp, k8stest.RestoreOptions{UnderRunningAPIServer: true})
	if rv := pumpUntil(t, leases, x-1); rv != x-1 {
		t.Fatalf("the revision went to %d past %d: another writer moved it; run again", rv, x-1)
	}
	lw = mustExtend(t, w, lw, now+60_000)
	if rv, rec := objRV(); rv != x {
		t.Fatalf("W's renewal was given resourceVersion %d, not %d; run again", rv, x)
	} else {
		t.Logf("after the restore W renewed 5 (epoch %d, acknowledged mark %d) at resourceVersion %d: %s", lw.Token, lw.MarkMs, rv, rec)
	}

	// C, a fresh process, claims 5 at a clock past A's lost mark and below W's.
	c := open(t, srv.Config(), cfg)
	lc, err := c.Claim(t.Context(), on("c", 5, now+30_001))
	_, after := objRV()
	if err == nil {
		_, werr := w.Extend(t.Context(), lw, now+61_000, 10*time.Second)
		t.Errorf("DUPLICATE WINDOW: C claimed 5 (epoch %d, start %d, mark %d) over W's live lease (epoch %d, acknowledged mark %d): "+
			"its list and its record test saw the watch cache's lost-history record; the object now holds %s; W's next renewal: %v",
			lc.Token, lc.StartMs, lc.MarkMs, lw.Token, lw.MarkMs, after, werr)
		return
	}
	t.Logf("C's claim: %v; the object holds %s", err, after)
}
