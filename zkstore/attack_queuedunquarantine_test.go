package zkstore

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
)

// TestAttackQueuedUnquarantineLandsAfterRestore: an operator's
// Unquarantine, planned on the quarantined record (version 2) and left
// queued (its call abandoned), goes out after the ensemble was restored
// from a copy taken before the quarantine, when B, a process that saw
// nothing, has claimed the number: B's record is at version 2 too. On the
// version alone the unquarantine would free B's live lease with the
// quarantine's mark, below B's acknowledged one, for the next claimer to
// start under IDs B issues. Its multi-op checks the quarantine's own claim
// child, which the restored data never had: it fails, and B's lease
// stands.
func TestAttackQueuedUnquarantineLandsAfterRestore(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 1)
	path := attackPath("unquarantine")
	op, pc, let := parkedStore(t, e, path)
	a := attackStore(t, e, path)
	ctx := t.Context()
	now := time.Now().UnixMilli()

	// A holds 5 (version 0: created; 1: renewed). The cold copy is taken here.
	_, cp := claimThenCopy(t, e, a, now)
	// The operator quarantines 5 (version 2), then unquarantines it: the
	// write is queued, the call abandoned.
	if err := attackSettle(t, func(ctx context.Context) error { return op.Quarantine(ctx, 5) }); err != nil {
		t.Fatalf("quarantine: %v", err)
	}
	err := abandon(t, pc, time.Second, func(ctx context.Context) error { return op.Unquarantine(ctx, 5) })
	if err == nil {
		t.Fatal("Unquarantine with its write queued succeeded; want an error of unknown outcome")
	}
	t.Logf("Unquarantine, write queued: %v", err)

	// Restored: 5 is back at version 1, held by A to now+10s. B claims it
	// once A's lease ran out by its clock (version 2) and holds it.
	restoreFrom(e, cp)
	b, lb := bClaims(t, e, path, now)

	landed := letOut(t, e, path, pc, let, "the queued unquarantine")
	t.Logf("the queued unquarantine (made for version 2 of the lost history): %v", landed)
	if landed == nil {
		t.Errorf("the queued unquarantine committed on B's record")
	}
	rec, err := b.Get(ctx, 5)
	if err != nil || rec.Holder != "b" || rec.Token != lb.Token || rec.MarkMs != lb.MarkMs {
		t.Fatalf("B's record after the queued unquarantine went out = %+v, %v; want B's lease (token %d, mark %d)", rec, err, lb.Token, lb.MarkMs)
	}
	if _, err := b.Extend(ctx, lb, lb.MarkMs+10_000, 10*time.Second); err != nil {
		t.Errorf("B's renewal after the queued unquarantine went out: %v; want it to renew", err)
	}
}
