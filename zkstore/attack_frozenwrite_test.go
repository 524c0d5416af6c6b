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
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

func TestAttackFrozenRenewalAfterRestoreConnect(t *testing.T) { frozenRenewal(t, 1) }

// TestAttackFrozenRenewalAfterRestoreEnsemble is the same on a
// three-server ensemble restored from a cold copy of all three.
func TestAttackFrozenRenewalAfterRestoreEnsemble(t *testing.T) { frozenRenewal(t, 3) }

func frozenRenewal(t *testing.T, n int) {
	e := zktest.Start(t, n)
	path := fmt.Sprintf("/attack%d/frozen-%d", time.Now().UnixNano()%1e9, attackSeq.Add(1))
	a, err := Connect(e.Servers(), 4*time.Second, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	pc := &parked{client: a.c, go_: make(chan struct{}), done: make(chan error, 1)}
	a.c = pc
	var thawOnce sync.Once
	thaw := func() { thawOnce.Do(func() { close(pc.go_) }) }
	t.Cleanup(thaw)
	ctx := t.Context()
	now := time.Now().UnixMilli()
	cr := func(holder string, nowMs int64) lease.ClaimRequest {
		return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 5, Hi: 5}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
	}
	la, err := a.Claim(ctx, cr("a", now)) // version 0
	if err != nil {
		t.Fatal(err)
	}
	if la, err = a.Extend(ctx, la, now+10_000, 10*time.Second); err != nil { // 1
		t.Fatal(err)
	}
	e.StopAll()
	cp := e.CopyData()
	e.StartAll()
	for _, m := range []int64{now + 20_000, now + 30_000} { // 2, 3
		if err := attackSettle(t, func(ctx context.Context) error {
			l, err := a.Extend(ctx, la, m, 10*time.Second)
			if err == nil {
				la = l
			}
			return err
		}); err != nil {
			t.Fatalf("A renews to %d: %v", m, err)
		}
	}
	// A freezes between its renewal's read (version 3) and its Set: the
	// renewal is left waiting, as a frozen process's goroutine does.
	pc.armed.Store(true)
	type result struct {
		l   *lease.Lease
		err error
	}
	frozen := make(chan result, 1)
	go func() {
		l, err := a.Extend(context.WithoutCancel(ctx), la, now+40_000, 10*time.Second)
		frozen <- result{l, err}
	}()
	if !pollFor(zktest.ReadyTimeout, func() bool { return pc.inSet.Load() }) {
		t.Fatal("A's renewal never reached its write")
	}
	sess := a.sess
	g0 := sess.generation()
	e.StopAll()
	e.Restore(cp)
	e.StartAll()
	b, err := New(attackDial(t, e), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var lb *lease.Lease
	if err := attackSettle(t, func(ctx context.Context) error {
		l, err := b.Claim(ctx, cr("b", now+10_001))
		lb = l
		return err
	}); err != nil {
		t.Fatalf("B claims 5 after the restore: %v", err)
	}
	if lb, err = b.Extend(ctx, lb, now+25_000, 10*time.Second); err != nil {
		t.Fatalf("B renews: %v", err)
	}
	// The frozen process's dead session is replaced by Connect (twice its
	// timeout without one) or served again; either way A's client is live.
	if !pollFor(zktest.ReadyTimeout, func() bool {
		return sess.generation() != g0 || sess.current().State() == zk.StateHasSession
	}) {
		t.Fatal("A's session never came back")
	}
	t.Logf("A's session replaced: %v", sess.generation() != g0)
	thaw()
	var r result
	select {
	case r = <-frozen:
	case <-time.After(zktest.ReadyTimeout):
		t.Fatal("A's frozen renewal never returned")
	}
	t.Logf("A's renewal, thawed (its Set made for version 3 of the lost history): err %v", r.err)
	if r.err == nil {
		t.Errorf("DUPLICATE WINDOW: after the restore A's renewal was acknowledged on machine 5 (epoch %d, mark %d) over B's live lease "+
			"(epoch %d, acknowledged mark %d, started %d); restores A's store noticed: %d",
			r.l.Token, r.l.MarkMs, lb.Token, lb.MarkMs, lb.StartMs, a.id.watch.Gen())
		la = r.l
	}
	err = attackSettle(t, func(ctx context.Context) error {
		l, err := a.Extend(ctx, la, now+50_000, 10*time.Second)
		if err == nil {
			la = l
		}
		return err
	})
	if err == nil {
		_, berr := b.Extend(ctx, lb, now+26_000, 10*time.Second)
		t.Errorf("DUPLICATE WINDOW: and A renews on (epoch %d, mark %d), no restore noticed by its store (%d); B's next renewal: %v",
			la.Token, la.MarkMs, a.id.watch.Gen(), berr)
		return
	}
	if !errors.Is(err, lease.ErrRestored) && !errors.Is(err, lease.ErrLost) {
		t.Fatalf("A's renewal after the restore: %v", err)
	}
	t.Logf("held: A's renewal after the restore: %v", err)
}
