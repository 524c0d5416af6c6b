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
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

func TestAttackQueuedClaimLandsAfterRestore(t *testing.T) {
	e := zktest.Start(t, 1)
	path := fmt.Sprintf("/attack%d/qclaim-%d", time.Now().UnixNano()%1e9, attackSeq.Add(1))
	a, err := New(attackDial(t, e), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Connect(e.Servers(), 4*time.Second, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pc := &parked{client: c.c, go_: make(chan struct{}), done: make(chan error, 1)}
	c.c = pc
	var once sync.Once
	let := func() { once.Do(func() { close(pc.go_) }) }
	t.Cleanup(let)
	ctx := t.Context()
	now := time.Now().UnixMilli()
	cr := func(holder string, nowMs int64) lease.ClaimRequest {
		return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 5, Hi: 5}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
	}
	la, err := a.Claim(ctx, cr("a", now)) // version 0, claim X
	if err != nil {
		t.Fatal(err)
	}
	if la, err = a.Extend(ctx, la, now+10_000, 10*time.Second); err != nil { // 1
		t.Fatal(err)
	}
	e.StopAll()
	cp := e.CopyData()
	e.StartAll()
	if err := attackSettle(t, func(ctx context.Context) error {
		l, err := a.Extend(ctx, la, now+12_000, 10*time.Second) // 2
		if err == nil {
			la = l
		}
		return err
	}); err != nil {
		t.Fatalf("A renews after the copy: %v", err)
	}
	if err := a.Release(ctx, la, now+12_000); err != nil { // 3: free, claim X
		t.Fatal(err)
	}
	// C plans its claim on the free record and its Multi waits.
	pc.armed.Store(true)
	type result struct {
		l   *lease.Lease
		err error
	}
	queued := make(chan result, 1)
	go func() {
		l, err := c.Claim(context.WithoutCancel(ctx), cr("c", now+12_500))
		queued <- result{l, err}
	}()
	if !pollFor(zktest.ReadyTimeout, func() bool { return pc.inSet.Load() }) {
		t.Fatal("C's claim never reached its write")
	}
	e.StopAll()
	e.Restore(cp)
	e.StartAll()
	b, err := New(attackDial(t, e), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var lb *lease.Lease
	if err := attackSettle(t, func(ctx context.Context) error {
		l, err := b.Claim(ctx, cr("b", now+10_001)) // 2, claim Y, over A's expired lease
		lb = l
		return err
	}); err != nil {
		t.Fatalf("B claims 5 after the restore: %v", err)
	}
	if lb, err = b.Extend(ctx, lb, now+25_000, 10*time.Second); err != nil { // 3
		t.Fatalf("B renews: %v", err)
	}
	sess := c.sess
	if !pollFor(zktest.ReadyTimeout, func() bool { return sess.current().State().String() == "StateHasSession" }) {
		t.Log("C's session not back yet; its queued write goes out when it is")
	}
	let()
	var r result
	select {
	case r = <-queued:
	case <-time.After(2 * zktest.ReadyTimeout):
		t.Fatal("C's queued claim never returned")
	}
	if r.err == nil {
		t.Fatalf("DUPLICATE WINDOW: C's claim planned before the restore took machine 5 (epoch %d, start %d) over B's live lease "+
			"(epoch %d, acknowledged mark %d, started %d)", r.l.Token, r.l.StartMs, lb.Token, lb.MarkMs, lb.StartMs)
	}
	t.Logf("held: C's claim planned before the restore: %v", r.err)
	if _, err := b.Extend(ctx, lb, now+26_000, 10*time.Second); err != nil {
		t.Errorf("B's renewal after C's late claim was refused: %v", err)
	}
}
