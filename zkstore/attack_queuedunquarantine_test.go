package zkstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
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
	e := zktest.Start(t, 1)
	path := fmt.Sprintf("/attack%d/unquarantine-%d", time.Now().UnixNano()%1e9, attackSeq.Add(1))
	pc := &parked{client: attackDial(t, e), go_: make(chan struct{}), done: make(chan error, 1)}
	var letGo sync.Once
	release := func() { letGo.Do(func() { close(pc.go_) }) }
	t.Cleanup(release)
	op, err := newStore(pc, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(attackDial(t, e), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	now := time.Now().UnixMilli()
	cr := func(holder string, nowMs int64) lease.ClaimRequest {
		return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 5, Hi: 5}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
	}

	// A holds 5 (version 0: created; 1: renewed). The cold copy is taken here.
	la, err := a.Claim(ctx, cr("a", now))
	if err != nil {
		t.Fatal(err)
	}
	if la, err = a.Extend(ctx, la, now+10_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	e.StopAll()
	cp := e.CopyData()
	e.StartAll()
	// The operator quarantines 5 (version 2), then unquarantines it: the
	// write is queued, the call abandoned.
	if err := attackSettle(t, func(ctx context.Context) error { return op.Quarantine(ctx, 5) }); err != nil {
		t.Fatalf("quarantine: %v", err)
	}
	pc.armed.Store(true)
	octx, cancel := context.WithTimeout(ctx, time.Second)
	err = op.Unquarantine(octx, 5)
	cancel()
	if err == nil {
		t.Fatal("Unquarantine with its write queued succeeded; want an error of unknown outcome")
	}
	t.Logf("Unquarantine, write queued: %v", err)

	// Restored: 5 is back at version 1, held by A to now+10s. B claims it
	// once A's lease ran out by its clock (version 2) and holds it.
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

	attackPump(t, e, path+"-pump", 60)
	release()
	select {
	case landed := <-pc.done:
		t.Logf("the queued unquarantine (made for version 2 of the lost history): %v", landed)
		if landed == nil {
			t.Errorf("the queued unquarantine committed on B's record")
		}
	case <-time.After(zktest.ReadyTimeout):
		t.Fatal("the queued unquarantine never went out")
	}
	rec, err := b.Get(ctx, 5)
	if err != nil || rec.Holder != "b" || rec.Token != lb.Token || rec.MarkMs != lb.MarkMs {
		t.Fatalf("B's record after the queued unquarantine went out = %+v, %v; want B's lease (token %d, mark %d)", rec, err, lb.Token, lb.MarkMs)
	}
	if _, err := b.Extend(ctx, lb, lb.MarkMs+10_000, 10*time.Second); err != nil {
		t.Errorf("B's renewal after the queued unquarantine went out: %v; want it to renew", err)
	}
}
