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
// The parked client models the delayed goroutine: its armed Set waits
// until the test lets it go, then is sent as it was made.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

// parked is a client whose next Set or Multi, once armed, waits (as a request in
// go-zookeeper's send queue waits for the session to reconnect) until
// the test lets it go, and is then sent as it was made: the same path,
// data and version. The store's call has long been abandoned by then.
type parked struct {
	client
	armed atomic.Bool
	inSet atomic.Bool // the armed Set is waiting
	go_   chan struct{}
	done  chan error
}

// generation passes on the session generation of a Connect store's client.
func (c *parked) generation() uint64 { return generation(c.client) }

func (c *parked) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	if c.armed.CompareAndSwap(true, false) {
		c.inSet.Store(true)
		<-c.go_
		st, err := c.client.Set(path, data, version)
		c.done <- err
		return st, err
	}
	return c.client.Set(path, data, version)
}

// Multi parks as Set does: the store's writes on a lease znode are
// multi-ops (fence_zkchild.go).
func (c *parked) Multi(ops ...any) ([]zk.MultiResponse, error) {
	if c.armed.CompareAndSwap(true, false) {
		c.inSet.Store(true)
		<-c.go_
		res, err := c.client.Multi(ops...)
		c.done <- err
		return res, err
	}
	return c.client.Multi(ops...)
}

type quietLog struct{}

func (quietLog) Printf(string, ...any) {}

func attackDial(t *testing.T, e *zktest.Ensemble) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(e.Servers(), 4*time.Second, zk.WithLogger(quietLog{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// attackSettle retries f (bounded) while it fails with an untyped error:
// the sessions reconnect on their own after the restarts.
func attackSettle(t *testing.T, f func(ctx context.Context) error) error {
	t.Helper()
	deadline := time.Now().Add(zktest.ReadyTimeout)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		err := f(ctx)
		cancel()
		typed := errors.Is(err, lease.ErrRestored) || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrNoFreeNumber)
		if err == nil || typed || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond) // poll, bounded: a session reconnecting
	}
}

// attackPump writes n znodes on a fresh session, moving the restored
// server's zxid past every zxid the old sessions saw (they are refused
// until it does, doc.go).
func attackPump(t *testing.T, e *zktest.Ensemble, path string, n int) {
	t.Helper()
	c := attackDial(t, e)
	if _, err := c.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := c.Create(fmt.Sprintf("%s/%d", path, i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
}

var attackSeq atomic.Int64

// pollFor polls cond until it holds or d passes.
func pollFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // poll, bounded
	}
	return true
}

func TestAttackQueuedRenewalLandsAfterRestore(t *testing.T) {
	e := zktest.Start(t, 1)
	path := fmt.Sprintf("/attack%d/queued-%d", time.Now().UnixNano()%1e9, attackSeq.Add(1))
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
	claim := func(s *Store, holder string, nowMs int64) *lease.Lease {
		t.Helper()
		l, err := s.Claim(ctx, lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 5, Hi: 5}, NowMs: nowMs,
			LeaseFor: 10 * time.Second, MaxAhead: time.Hour})
		if err != nil {
			t.Fatalf("%s claims 5: %v", holder, err)
		}
		return l
	}

	// A holds 5 (version 0: created; 1: renewed). The cold copy is taken here.
	la := claim(a, "a", now)
	if la, err = a.Extend(ctx, la, now+10_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	e.StopAll()
	cp := e.CopyData()
	e.StartAll()
	// A renews twice after the copy (versions 2 and 3): marks the restore will lose.
	for _, m := range []int64{now + 20_000, now + 30_000} {
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
	// A's next renewal: its Set (on version 3) is queued, the call abandoned.
	pc.armed.Store(true)
	actx, cancel := context.WithTimeout(ctx, time.Second)
	_, err = a.Extend(actx, la, now+40_000, 10*time.Second)
	cancel()
	if err == nil || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrRestored) {
		t.Fatalf("A's renewal with its write queued: %v, want an error of unknown outcome", err)
	}
	t.Logf("A's renewal, write queued: %v", err)

	// The ensemble is restored from the copy: 5 is back at version 1, A's mark now+10s.
	e.StopAll()
	e.Restore(cp)
	e.StartAll()

	// B, a process that saw nothing before, finds A's restored lease
	// expired by its clock, claims 5 (version 2) and renews (version 3).
	b, err := New(attackDial(t, e), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var lb *lease.Lease
	if err := attackSettle(t, func(ctx context.Context) error {
		l, err := b.Claim(ctx, lease.ClaimRequest{Holder: "b", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: now + 10_001,
			LeaseFor: 10 * time.Second, MaxAhead: time.Hour})
		lb = l
		return err
	}); err != nil {
		t.Fatalf("B claims 5 after the restore: %v", err)
	}
	if lb, err = b.Extend(ctx, lb, now+25_000, 10*time.Second); err != nil {
		t.Fatalf("B renews: %v", err)
	}
	t.Logf("B holds 5: epoch %d, start %d, acknowledged mark %d", lb.Token, lb.StartMs, lb.MarkMs)

	// Other clients' writes move the zxid past A's; A's session is served
	// again and its queued Set goes out — on version 3, which is now B's.
	attackPump(t, e, path+"-pump", 60)
	release()
	var landed error
	select {
	case landed = <-pc.done:
	case <-time.After(zktest.ReadyTimeout):
		t.Fatal("A's queued write never went out")
	}
	t.Logf("A's queued write (made for version 3 of the lost history): %v", landed)

	// Whatever became of it, A was cut off by a restore that took back
	// marks the store acknowledged to it: its renewal must fail, and B's
	// acknowledged lease must stand (or B must be told of a restore).
	err = attackSettle(t, func(ctx context.Context) error {
		l, err := a.Extend(ctx, la, now+50_000, 10*time.Second)
		if err == nil {
			la = l
		}
		return err
	})
	if err == nil {
		_, berr := b.Extend(ctx, lb, now+26_000, 10*time.Second)
		t.Errorf("DUPLICATE WINDOW: after the restore A renewed machine 5 (epoch %d) to mark %d over B's live lease "+
			"(epoch %d, acknowledged mark %d, started %d): both issue on 5 over [%d, %d); restores A's store noticed: %d; B's next renewal: %v",
			la.Token, la.MarkMs, lb.Token, lb.MarkMs, lb.StartMs, lb.StartMs, lb.MarkMs, a.id.watch.Gen(), berr)
		return
	}
	if !errors.Is(err, lease.ErrRestored) && !errors.Is(err, lease.ErrLost) {
		t.Fatalf("A's renewal after the restore: %v", err)
	}
	t.Logf("held: A's renewal after the restore: %v", err)
}
