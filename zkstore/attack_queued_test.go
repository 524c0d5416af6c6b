package zkstore

// Attack: a renewal's write of unknown outcome whose call the store
// abandoned (its context ended) and whose goroutine is delayed — a frozen
// or starved process, the call's goroutine not yet run or stuck before
// the request reaches go-zookeeper — when the ensemble is restored from a
// cold copy. (go-zookeeper's own unsent queue is flushed with ErrNoServer
// at every connect round that fails, so it carries a request across a
// restore only in a narrow window; the store's abandoned goroutine, or a
// frozen process, carries it always.) The store's safety argument for a
// late write is "every write is conditional on the znode's version, so a
// late one commits only on the state it was made for" (client.go, call).
// A restore breaks that premise: the restored znode repeats the data
// versions of the lost history, so after another claimer has written the
// znode as many times, the late Set finds the version it was made for on a
// record it never read — another holder's live lease — and commits over
// it. The holder whose write it was then renews on, with no sign of the
// restore (its own record is back, at a higher version, a later zxid and a
// higher mark), while the other holder's acknowledged lease is taken from
// it without any restore noticed by the late writer and no restore floor
// written. (pgstore conditions its UPDATEs on the row's content — holder,
// epoch, claim nonce, renewal values — so a late statement matches only
// its own holder's row in any history.)
//
// The parked client (attackkit_test.go) models the delayed goroutine: its
// armed Set waits until the test lets it go, then is sent as it was made.

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
)

func TestAttackQueuedRenewalLandsAfterRestore(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 1)
	path := attackPath("queued")
	a, pc, let := parkedStore(t, e, path)
	ctx := t.Context()
	now := time.Now().UnixMilli()

	// A holds 5 (version 0: created; 1: renewed). The cold copy is taken here.
	la, cp := claimThenCopy(t, e, a, now)
	// A renews twice after the copy (versions 2 and 3): marks the restore will lose.
	la = renewEach(t, a, la, now+20_000, now+30_000)
	// A's next renewal: its Set (on version 3) is queued, the call abandoned.
	err := abandonUnknown(t, pc, time.Second, "A's renewal with its write queued", func(ctx context.Context) error {
		_, err := a.Extend(ctx, la, now+40_000, 10*time.Second)
		return err
	})
	t.Logf("A's renewal, write queued: %v", err)

	// The ensemble is restored from the copy: 5 is back at version 1, A's mark now+10s.
	restoreFrom(e, cp)

	// B, a process that saw nothing before, finds A's restored lease
	// expired by its clock, claims 5 (version 2) and renews (version 3).
	b, lb := bClaimsAndRenews(t, e, path, now)
	t.Logf("B holds 5: epoch %d, start %d, acknowledged mark %d", lb.Token, lb.StartMs, lb.MarkMs)

	// Other clients' writes move the zxid past A's; A's session is served
	// again and its queued Set goes out — on version 3, which is now B's.
	landed := letOut(t, e, path, pc, let, "A's queued write")
	t.Logf("A's queued write (made for version 3 of the lost history): %v", landed)

	// Whatever became of it, A was cut off by a restore that took back
	// marks the store acknowledged to it: its renewal must fail, and B's
	// acknowledged lease must stand (or B must be told of a restore).
	if la, err = settleRenew(t, a, la, now+50_000); err == nil {
		_, berr := b.Extend(ctx, lb, now+26_000, 10*time.Second)
		t.Errorf("DUPLICATE WINDOW: after the restore A renewed machine 5 (epoch %d) to mark %d over B's live lease "+
			"(epoch %d, acknowledged mark %d, started %d): both issue on 5 over [%d, %d); restores A's store noticed: %d; B's next renewal: %v",
			la.Token, la.MarkMs, lb.Token, lb.MarkMs, lb.StartMs, lb.StartMs, lb.MarkMs, a.id.watch.Gen(), berr)
		return
	}
	heldAfterRestore(t, err)
}
