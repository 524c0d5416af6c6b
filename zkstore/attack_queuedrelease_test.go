package zkstore

// Attack: the release flavour of the queued write across a restore
// (attack_queued_test.go). A's release of unknown outcome is abandoned
// by its context, its goroutine delayed (parked) until after a restore;
// the ensemble is restored from a cold copy; B claims A's restored
// (expired) number and renews it as many times as A wrote it after the
// copy; A's late release then goes out on the repeated version and
// writes B's live lease free, with A's own end-of-issuing as the mark. A
// third process C claims it as free and starts below the mark the store
// acknowledged to B — with no restore noticed by anyone before C's claim.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

func TestAttackQueuedReleaseLandsAfterRestore(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 1)
	path := attackPath("queuedrel")
	a, pc, let := parkedStore(t, e, path)
	ctx := t.Context()
	now := time.Now().UnixMilli()

	la, cp := claimThenCopy(t, e, a, now)        // versions 0 and 1
	la, err := settleRenew(t, a, la, now+20_000) // version 2
	if err != nil {
		t.Fatal(err)
	}
	// A stops having issued up to now+11s and releases: its Set (on
	// version 2) is queued, the call abandoned.
	err = abandonUnknown(t, pc, time.Second, "A's release with its write queued", func(ctx context.Context) error {
		return a.Release(ctx, la, now+11_000)
	})
	t.Logf("A's release, write queued: %v", err)

	restoreFrom(e, cp)

	// B claims A's restored lease, expired by B's clock (version 1 -> 2), and holds it to now+60s.
	b, lb := bClaims(t, e, path, now)
	// B's claim wrote mark now+20_001; it issues below it from its start.
	t.Logf("B holds 5: epoch %d, start %d, acknowledged mark %d", lb.Token, lb.StartMs, lb.MarkMs)

	landed := letOut(t, e, path, pc, let, "A's queued release")
	t.Logf("A's queued release (made for version 2 of the lost history): %v", landed)

	// C, a fresh process, claims 5 at a clock still inside B's lease.
	c := attackStore(t, e, path)
	var lc *lease.Lease
	err = attackSettle(t, func(ctx context.Context) error {
		l, err := c.Claim(ctx, on5("c", now+12_000))
		lc = l
		return err
	})
	switch {
	case errors.Is(err, lease.ErrNoFreeNumber):
		t.Logf("held: C finds 5 held: %v", err)
	case err != nil:
		t.Fatalf("C's claim: %v", err)
	case lc.StartMs < lb.MarkMs:
		_, berr := b.Extend(ctx, lb, lb.MarkMs, 10*time.Second)
		t.Logf("B's renewal after C's claim: %v", berr)
		t.Errorf("DUPLICATE WINDOW: C claimed machine 5 (epoch %d) starting at %d, below B's acknowledged mark %d (B epoch %d, "+
			"started %d, never released): both may issue on 5 over [%d, %d); no restore was noticed before C's claim",
			lc.Token, lc.StartMs, lb.MarkMs, lb.Token, lb.StartMs, lc.StartMs, lb.MarkMs)
	default:
		t.Logf("held: C's claim starts at %d, at or above B's mark %d", lc.StartMs, lb.MarkMs)
	}
}
