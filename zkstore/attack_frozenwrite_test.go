package zkstore

// Attack: the queued-write-across-a-restore (attack_queued_test.go) on the
// store's own session management (Connect), through a frozen process: A's
// renewal has read its znode and built its versioned Set when the process
// is frozen (SIGSTOP, a VM pause); the call's context ends, as on a lost
// reply. While A is frozen the ensemble is restored from a cold copy and B
// claims and renews A's restored, expired number. A thaws: Connect has
// replaced the dead session (its servers refused it), and the Set goes out
// on the new session, made for a version the restore repeated — on B's
// record. A's next renewal then succeeds with no restore noticed, and A's
// keeper "resumes issuing after the next successful renewal" (lease/hold.go)
// on a number B holds.

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

func TestAttackFrozenRenewalAfterRestoreConnect(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	frozenRenewal(t, 1)
}

// TestAttackFrozenRenewalAfterRestoreEnsemble is the same on a
// three-server ensemble restored from a cold copy of all three.
func TestAttackFrozenRenewalAfterRestoreEnsemble(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	frozenRenewal(t, 3)
}

func frozenRenewal(t *testing.T, n int) {
	e := zktest.Start(t, n)
	path := attackPath("frozen")
	a, pc, thaw := parkedConnect(t, e, path)
	ctx := t.Context()
	now := time.Now().UnixMilli()
	la, cp := claimThenCopy(t, e, a, now)            // versions 0 and 1
	la = renewEach(t, a, la, now+20_000, now+30_000) // 2, 3
	// A freezes between its renewal's read (version 3) and its Set: the
	// renewal is left waiting, as a frozen process's goroutine does.
	frozen := parkCall(t, pc, "A's renewal", func(ctx context.Context) (*lease.Lease, error) {
		return a.Extend(ctx, la, now+40_000, 10*time.Second)
	})
	sess := a.sess
	g0 := sess.generation()
	restoreFrom(e, cp)
	b, lb := bClaimsAndRenews(t, e, path, now)
	// The frozen process's dead session is replaced by Connect (twice its
	// timeout without one) or served again; either way A's client is live.
	if !pollFor(zktest.ReadyTimeout, func() bool {
		return sess.generation() != g0 || sess.current().State() == zk.StateHasSession
	}) {
		t.Fatal("A's session never came back")
	}
	t.Logf("A's session replaced: %v", sess.generation() != g0)
	thaw()
	r := awaitCall(t, frozen, zktest.ReadyTimeout, "A's frozen renewal")
	t.Logf("A's renewal, thawed (its Set made for version 3 of the lost history): err %v", r.err)
	if r.err == nil {
		t.Errorf("DUPLICATE WINDOW: after the restore A's renewal was acknowledged on machine 5 (epoch %d, mark %d) over B's live lease "+
			"(epoch %d, acknowledged mark %d, started %d); restores A's store noticed: %d",
			r.l.Token, r.l.MarkMs, lb.Token, lb.MarkMs, lb.StartMs, a.id.watch.Gen())
		la = r.l
	}
	la, err := settleRenew(t, a, la, now+50_000)
	if err == nil {
		_, berr := b.Extend(ctx, lb, now+26_000, 10*time.Second)
		t.Errorf("DUPLICATE WINDOW: and A renews on (epoch %d, mark %d), no restore noticed by its store (%d); B's next renewal: %v",
			la.Token, la.MarkMs, a.id.watch.Gen(), berr)
		return
	}
	heldAfterRestore(t, err)
}
