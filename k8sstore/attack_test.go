package k8sstore_test

// Attacks: a write planned before an etcd restore lands after it. Holder
// A's renewal (or release) has read its object (resourceVersion X, record
// S) and built its patch when the request is held — a process frozen
// between its read and its write, a request queued in a retrying client.
// Meanwhile etcd is restored under the API server from a copy taken before
// (without etcdutl's --bump-revision): A's object is back at an older
// resourceVersion, A's lease expired by the restored mark. B, a process
// that saw nothing before, claims the number and renews until the
// object's resourceVersion is X again (other writes move etcd's revision
// between). Then A's patch is sent. It tests resourceVersion X, which
// matches — on B's record. With the record test (fence_k8srecord.go) it
// is refused (422: the object does not hold S); built with
// snowfence_revert_k8srecord it lands on B's live lease: A's renewal
// holds an acknowledged mark beside B's (DUPLICATE WINDOW), A's release
// frees the number under B, and another claimer takes it (DUPLICATE
// WINDOW, committed on B's record) — each fails its test.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
)

// staleAttack is the scenario's state once A's held write went out.
type staleAttack struct {
	srv    *k8stest.Server
	cfg    k8sstore.Config
	now    int64
	a, b   *k8sstore.Store
	la, lb *lease.Lease
	status string // how A's held patch ended: its HTTP status
	err    error  // what A's call returned
	record func() string
}

// staleWriteAfterRestore plays the scenario with write as A's call (made
// on A's lease, on a context that never ends): held at its patch across
// the restore, sent once B's object is at the resourceVersion A read.
func staleWriteAfterRestore(t *testing.T, write func(ctx context.Context, a *k8sstore.Store, la *lease.Lease) error) *staleAttack {
	t.Helper()
	srv := k8stest.Start(t)
	ns := srv.Namespace(t)
	leases := srv.Clientset(t).CoordinationV1().Leases(ns)
	now := time.Now().UnixMilli()
	cfg := k8sstore.Config{Namespace: ns, Clock: fakeclock.New(time.UnixMilli(now))}
	p := newParker(t)
	rcA := srv.Config()
	rcA.Wrap(p.wrap)
	a := open(t, rcA, cfg)
	name := "snowfence-r0-5"
	objRV := func() (uint64, string) {
		l, err := leases.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		return rvOf(t, l.ResourceVersion), l.Annotations["snowfence.io/record"]
	}

	// A holds 5; the copy is taken; etcd's revision moves on (other
	// writes), and A renews twice: writes the restore will lose.
	la := mustExtend(t, a, mustClaim(t, a, on("a", 5, now)), now+10_000)
	cp := srv.CopyData(t)
	copied, _ := objRV()
	pumpUntil(t, leases, copied+200) // room for what the API server writes when it starts again
	la = mustExtend(t, a, la, now+20_000)
	la = mustExtend(t, a, la, now+30_000)

	// A's write reads the object and is held before its patch.
	p.armed.Store(true)
	out := make(chan error, 1)
	go func() { out <- write(context.WithoutCancel(t.Context()), a, la) }()
	select {
	case <-p.parked:
	case <-time.After(30 * time.Second):
		t.Fatal("A's write never reached its patch")
	}
	x, planned := objRV()
	t.Logf("A's write is held: planned on resourceVersion %d, record %s", x, planned)

	srv.Restore(t, cp)
	back, _ := objRV()
	t.Logf("restored: %s is back at resourceVersion %d (copy taken at %d)", name, back, copied)

	// B, which saw nothing before, finds A's restored lease expired by its
	// clock and claims 5; other writes move the revision to just below X,
	// and B's renewal is given resourceVersion X.
	b := open(t, srv.Config(), cfg)
	lb := mustClaim(t, b, on("b", 5, now+10_001))
	if rv, _ := objRV(); rv >= x {
		t.Fatalf("B's claim was given resourceVersion %d, not below the %d A planned on: the API server wrote more than expected "+
			"after the restore; pump more before A's renewals", rv, x)
	}
	if rv := pumpUntil(t, leases, x-1); rv != x-1 {
		t.Fatalf("the revision went to %d past %d: another writer moved it; run again", rv, x-1)
	}
	lb = mustExtend(t, b, lb, now+25_000)
	if rv, rec := objRV(); rv != x {
		t.Fatalf("B's renewal was given resourceVersion %d, not the %d A planned on: another writer (the API server's own "+
			"lease) moved etcd's revision between; run again", rv, x)
	} else {
		t.Logf("B holds 5 (epoch %d, start %d, acknowledged mark %d) at resourceVersion %d: %s", lb.Token, lb.StartMs, lb.MarkMs, rv, rec)
	}

	// A's held patch goes out: resourceVersion X matches, on B's record.
	p.let()
	st := &staleAttack{srv: srv, cfg: cfg, now: now, a: a, b: b, la: la, lb: lb,
		record: func() string { _, rec := objRV(); return rec }}
	select {
	case st.status = <-p.status:
	case <-time.After(time.Minute):
		t.Fatal("A's held patch never went out")
	}
	select {
	case st.err = <-out:
	case <-time.After(time.Minute):
		t.Fatal("A's write never returned")
	}
	t.Logf("A's held patch: %s; A's call: %v", st.status, st.err)
	return st
}

// refused checks that A's held patch was refused by its JSON Patch test
// (422) and that B's lease stands: B renews, the object holds B's record.
func (st *staleAttack) refused(t *testing.T) {
	t.Helper()
	if !strings.HasPrefix(st.status, "422") {
		t.Errorf("A's held patch ended %q, want 422 (a failed JSON Patch test)", st.status)
	}
	if _, err := extend(t, st.b, st.lb, st.now+26_000); err != nil {
		t.Errorf("B's renewal after A's refused patch: %v", err)
	}
	if rec := st.record(); !strings.Contains(rec, `"holder":"b"`) {
		t.Errorf("the object holds %s after A's refused patch, want B's record", rec)
	}
}

func TestAttackStaleRenewalAfterRestore(t *testing.T) {
	st := staleWriteAfterRestore(t, func(ctx context.Context, a *k8sstore.Store, la *lease.Lease) error {
		_, err := a.Extend(ctx, la, la.MarkMs+10_000, 10*time.Second)
		return err
	})
	if st.err == nil {
		_, berr := st.b.Extend(t.Context(), st.lb, st.now+26_000, 10*time.Second)
		t.Errorf("DUPLICATE WINDOW: after the restore A's renewal was acknowledged on machine 5 (epoch %d, to mark %d) over B's live "+
			"lease (epoch %d, started %d, acknowledged mark %d): both issue on 5 over [%d, %d); the object now holds %s; B's next renewal: %v",
			st.la.Token, st.la.MarkMs+10_000, st.lb.Token, st.lb.StartMs, st.lb.MarkMs, st.lb.StartMs, st.lb.MarkMs, st.record(), berr)
		return
	}
	if !errors.Is(st.err, lease.ErrLost) && !errors.Is(st.err, lease.ErrRestored) {
		t.Errorf("A's renewal after the restore: %v, want ErrLost or ErrRestored", st.err)
	}
	st.refused(t)
	if _, err := extend(t, st.a, st.la, st.now+50_000); err == nil {
		t.Errorf("DUPLICATE WINDOW: A renews on after the restore")
	}
}

// TestAttackStaleReleaseAfterRestore: A's release, held across the
// restore, must not free the number under B's live lease.
func TestAttackStaleReleaseAfterRestore(t *testing.T) {
	st := staleWriteAfterRestore(t, func(ctx context.Context, a *k8sstore.Store, la *lease.Lease) error {
		return a.Release(ctx, la, la.MarkMs)
	})
	if st.err == nil {
		c := open(t, st.srv.Config(), st.cfg)
		lc, cerr := c.Claim(t.Context(), on("c", 5, st.now+10_002))
		t.Errorf("DUPLICATE WINDOW: after the restore A's release committed on B's record (B's lease: epoch %d, started %d, "+
			"acknowledged mark %d); the object now holds %s; a third claimer's claim of 5: %+v, %v",
			st.lb.Token, st.lb.StartMs, st.lb.MarkMs, st.record(), lc, cerr)
		return
	}
	if !errors.Is(st.err, lease.ErrLost) && !errors.Is(st.err, lease.ErrRestored) {
		t.Errorf("A's release after the restore: %v, want ErrLost or ErrRestored", st.err)
	}
	st.refused(t)
}
