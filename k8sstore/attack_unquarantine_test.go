package k8sstore_test

// Attack: an operator's Unquarantine, planned on the quarantined record
// and held (its request queued in a retrying client), goes out after etcd
// was restored under the API server from a copy taken before the
// quarantine, when B, a process that saw nothing, has claimed the number
// and renewed until the object's resourceVersion is the one the
// unquarantine read — and B's epoch is the quarantine's, one more than the
// restored holder's. On the resourceVersion alone the unquarantine would
// free B's live lease with the quarantine's mark, below B's acknowledged
// one, and the next claimer would start under IDs B issues. The record
// test refuses it (422): B's record is not the quarantine's, whose claim
// nonce only the quarantine wrote. Built with snowfence_revert_k8srecord
// it lands: a DUPLICATE WINDOW, which fails the test.

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
)

func TestAttackQueuedUnquarantineLandsAfterRestore(t *testing.T) {
	srv := k8stest.Start(t)
	ns := srv.Namespace(t)
	leases := srv.Clientset(t).CoordinationV1().Leases(ns)
	now := time.Now().UnixMilli()
	cfg := k8sstore.Config{Namespace: ns}
	p := newParker(t)
	rcOp := srv.Config()
	rcOp.Wrap(p.wrap)
	a := open(t, srv.Config(), cfg)
	op := open(t, rcOp, cfg)
	name := "snowfence-r0-5"
	objRV := func() (uint64, string) {
		l, err := leases.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		return rvOf(t, l.ResourceVersion), l.Annotations["snowfence.io/record"]
	}

	// A holds 5; the copy is taken; etcd's revision moves on; the
	// operator quarantines 5 (epoch 2, a new claim nonce).
	mustExtend(t, a, mustClaim(t, a, on("a", 5, now)), now+10_000)
	cp := srv.CopyData(t)
	copied, _ := objRV()
	pumpUntil(t, leases, copied+200) // room for what the API server writes when it starts again
	if err := op.Quarantine(t.Context(), 5); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}

	// The operator's Unquarantine reads the quarantined record and is
	// held before its patch.
	p.armed.Store(true)
	out := make(chan error, 1)
	go func() { out <- op.Unquarantine(context.WithoutCancel(t.Context()), 5) }()
	select {
	case <-p.parked:
	case <-time.After(30 * time.Second):
		t.Fatal("the unquarantine never reached its patch")
	}
	x, planned := objRV()
	t.Logf("the unquarantine is held: planned on resourceVersion %d, record %s", x, planned)

	srv.Restore(t, cp)
	back, _ := objRV()
	t.Logf("restored: %s is back at resourceVersion %d (copy taken at %d)", name, back, copied)

	// B, which saw nothing before, finds A's restored lease expired by its
	// clock and claims 5 (epoch 2, as the quarantine's); other writes move
	// the revision to just below X, and B's renewal is given X.
	b := open(t, srv.Config(), cfg)
	lb := mustClaim(t, b, on("b", 5, now+10_001))
	if rv, _ := objRV(); rv >= x {
		t.Fatalf("B's claim was given resourceVersion %d, not below the %d the unquarantine planned on; pump more before the quarantine", rv, x)
	}
	if rv := pumpUntil(t, leases, x-1); rv != x-1 {
		t.Fatalf("the revision went to %d past %d: another writer moved it; run again", rv, x-1)
	}
	lb = mustExtend(t, b, lb, now+25_000)
	if rv, rec := objRV(); rv != x {
		t.Fatalf("B's renewal was given resourceVersion %d, not the %d the unquarantine planned on: another writer moved etcd's "+
			"revision between; run again", rv, x)
	} else {
		t.Logf("B holds 5 (epoch %d, start %d, acknowledged mark %d) at resourceVersion %d: %s", lb.Token, lb.StartMs, lb.MarkMs, rv, rec)
	}

	// The held unquarantine goes out: resourceVersion X matches, on B's record.
	p.let()
	var status string
	select {
	case status = <-p.status:
	case <-time.After(time.Minute):
		t.Fatal("the held patch never went out")
	}
	var uerr error
	select {
	case uerr = <-out:
	case <-time.After(time.Minute):
		t.Fatal("the unquarantine never returned")
	}
	t.Logf("held unquarantine: %s; Unquarantine: %v", status, uerr)
	if !strings.HasPrefix(status, "422") {
		_, rec := objRV()
		c := open(t, srv.Config(), cfg)
		lc, cerr := claim(t, c, on("c", 5, now+10_002))
		if cerr == nil && lc.StartMs < lb.MarkMs {
			t.Errorf("DUPLICATE WINDOW: the unquarantine planned before the restore landed on B's live lease (%s; the object now "+
				"holds %s); C claimed 5 starting at %d, below B's acknowledged mark %d: both issue on 5 over [%d, %d)",
				status, rec, lc.StartMs, lb.MarkMs, lc.StartMs, lb.MarkMs)
			return
		}
		t.Errorf("the held unquarantine ended %q, want 422 (a failed JSON Patch test); the object holds %s; C's claim: %v", status, rec, cerr)
		return
	}
	if uerr == nil {
		t.Errorf("Unquarantine reported success though its patch was refused")
	}
	if _, err := extend(t, b, lb, now+26_000); err != nil {
		t.Errorf("B's renewal after the refused unquarantine: %v", err)
	}
}
