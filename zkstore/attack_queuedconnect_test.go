package zkstore

// Attack: the queued-write-across-a-restore (attack_queued_test.go) on a
// Store that Connect opened, with the write left in go-zookeeper's own
// send queue (made on the session while the servers are down, its call
// abandoned by its context), not held by the test. Connect replaces a
// session only after twice its timeout without a live connection; a
// restore quicker than that (here: stop, put the copy back, start) leaves
// the old session in place, refused by the restored server (it saw later
// zxids) until other clients' writes pass them — then it is served again
// and sends its queue: the Set made for version 3 of the lost history
// commits on version 3 of the restored one, B's record.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

// stalled is a client whose next Set, once armed, waits until the test
// says the servers are down and is then made on the session as it was
// built: go-zookeeper queues it until the session is served again.
type stalled struct {
	client
	armed atomic.Bool
	down  chan struct{}
	done  chan error
}

func (c *stalled) generation() uint64 { return generation(c.client) }

func (c *stalled) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	if c.armed.CompareAndSwap(true, false) {
		<-c.down
		st, err := c.client.Set(path, data, version)
		c.done <- err
		return st, err
	}
	return c.client.Set(path, data, version)
}

func TestAttackQueuedRenewalAfterRestoreConnect(t *testing.T) {
	e := zktest.Start(t, 1)
	path := fmt.Sprintf("/attack%d/queuedconn-%d", time.Now().UnixNano()%1e9, attackSeq.Add(1))
	a, err := Connect(e.Servers(), 4*time.Second, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	sc := &stalled{client: a.c, down: make(chan struct{}), done: make(chan error, 1)}
	a.c = sc
	downed := false
	t.Cleanup(func() {
		if !downed {
			close(sc.down)
		}
	})
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
	sc.armed.Store(true)
	actx, cancel := context.WithTimeout(ctx, time.Second)
	_, err = a.Extend(actx, la, now+40_000, 10*time.Second)
	cancel()
	if err == nil || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrRestored) {
		t.Fatalf("A's renewal with its write stalled: %v, want an error of unknown outcome", err)
	}
	e.StopAll()
	downed = true
	close(sc.down) // the Set is made now, on a session without a server: queued
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
	attackPump(t, e, path+"-pump", 60)
	var landed error
	select {
	case landed = <-sc.done:
	case <-time.After(zktest.ReadyTimeout):
		t.Fatal("A's queued write never answered")
	}
	t.Logf("A's queued write: %v", landed)
	err = attackSettle(t, func(ctx context.Context) error {
		_, err := a.Extend(ctx, la, now+50_000, 10*time.Second)
		return err
	})
	if err == nil {
		t.Errorf("DUPLICATE WINDOW: A renewed machine 5 over B's live lease (epoch %d, acknowledged mark %d, started %d) after the restore; "+
			"restores A's store noticed: %d", lb.Token, lb.MarkMs, lb.StartMs, a.id.watch.Gen())
		return
	}
	t.Logf("held: A's queued write %v; A's renewal after the restore: %v", landed, err)
}
