package zkstore

// Attack: a claim planned before a restore and sent after it. C reads
// machine 5 free (released by A, claim X, data version 3) and builds its
// claim's Multi; the request waits in a reconnecting session. The
// ensemble is restored from a copy in which A still holds 5 (version 1);
// B, which never saw the later state, takes the expired number over and
// renews it — version 3 again, under claim Y. C's Multi then goes out: its
// Set matches version 3, on B's live record. What keeps it out is the
// claim's Delete of claim X's child (fence_zkchild.go), which no longer
// exists; under the revert tag zkchild C holds B's number.

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

func TestAttackQueuedClaimLandsAfterRestore(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 1)
	path := attackPath("qclaim")
	a := attackStore(t, e, path)
	c, pc, let := parkedConnect(t, e, path)
	ctx := t.Context()
	now := time.Now().UnixMilli()
	la, cp := claimThenCopy(t, e, a, now)        // versions 0 and 1, claim X
	la, err := settleRenew(t, a, la, now+12_000) // 2
	if err != nil {
		t.Fatalf("A renews after the copy: %v", err)
	}
	if err := a.Release(ctx, la, now+12_000); err != nil { // 3: free, claim X
		t.Fatal(err)
	}
	// C plans its claim on the free record and its Multi waits.
	queued := parkCall(t, pc, "C's claim", func(ctx context.Context) (*lease.Lease, error) {
		return c.Claim(ctx, on5("c", now+12_500))
	})
	restoreFrom(e, cp)
	// B claims 5 over A's expired lease (2, claim Y) and renews (3).
	b, lb := bClaimsAndRenews(t, e, path, now)
	sess := c.sess
	if !pollFor(zktest.ReadyTimeout, func() bool { return sess.current().State().String() == "StateHasSession" }) {
		t.Log("C's session not back yet; its queued write goes out when it is")
	}
	let()
	r := awaitCall(t, queued, 2*zktest.ReadyTimeout, "C's queued claim")
	if r.err == nil {
		t.Fatalf("DUPLICATE WINDOW: C's claim planned before the restore took machine 5 (epoch %d, start %d) over B's live lease "+
			"(epoch %d, acknowledged mark %d, started %d)", r.l.Token, r.l.StartMs, lb.Token, lb.MarkMs, lb.StartMs)
	}
	t.Logf("held: C's claim planned before the restore: %v", r.err)
	if _, err := b.Extend(ctx, lb, now+26_000, 10*time.Second); err != nil {
		t.Errorf("B's renewal after C's late claim was refused: %v", err)
	}
}
