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
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

func TestAttackQueuedReleaseLandsAfterRestore(t *testing.T) {
	e := zktest.Start(t, 1)
	path := fmt.Sprintf("/attack%d/queuedrel-%d", time.Now().UnixNano()%1e9, attackSeq.Add(1))
	pc := &parked{client: attackDial(t, e), go_: make(chan struct{}), done: make(chan error, 1)}
	var letGo sync.Once
	release := func() { letGo.Do(func() { close(pc.go_) }) }
	t.Cleanup(release)
	a, err := newStore(pc, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	now := time.Now().UnixMilli()
	cr := func(holder string, nowMs int64) lease.ClaimRequest {
		return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 5, Hi: 5}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
	}

	la, err := a.Claim(ctx, cr("a", now)) // version 0
	if err != nil {
		t.Fatal(err)
	}
	if la, err = a.Extend(ctx, la, now+10_000, 10*time.Second); err != nil { // version 1
		t.Fatal(err)
	}
	e.StopAll()
	cp := e.CopyData()
	e.StartAll()
	if err := attackSettle(t, func(ctx context.Context) error { // version 2
		l, err := a.Extend(ctx, la, now+20_000, 10*time.Second)
		if err == nil {
			la = l
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// A stops having issued up to now+11s and releases: its Set (on
	// version 2) is queued, the call abandoned.
	pc.armed.Store(true)
	actx, cancel := context.WithTimeout(ctx, time.Second)
	err = a.Release(actx, la, now+11_000)
	cancel()
	if err == nil || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrRestored) {
		t.Fatalf("A's release with its write queued: %v, want an error of unknown outcome", err)
	}
	t.Logf("A's release, write queued: %v", err)

	e.StopAll()
	e.Restore(cp)
	e.StartAll()

	// B claims A's restored lease, expired by B's clock (version 1 -> 2), and holds it to now+60s.
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
	// B's claim wrote mark now+20_001; it issues below it from its start.
	t.Logf("B holds 5: epoch %d, start %d, acknowledged mark %d", lb.Token, lb.StartMs, lb.MarkMs)

	attackPump(t, e, path+"-pump", 60)
	release()
	var landed error
	select {
	case landed = <-pc.done:
	case <-time.After(zktest.ReadyTimeout):
		t.Fatal("A's queued release never went out")
	}
	t.Logf("A's queued release (made for version 2 of the lost history): %v", landed)

	// C, a fresh process, claims 5 at a clock still inside B's lease.
	c, err := New(attackDial(t, e), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var lc *lease.Lease
	err = attackSettle(t, func(ctx context.Context) error {
		l, err := c.Claim(ctx, cr("c", now+12_000))
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
