package zkstore

// The attack tests' kit: a client that parks its next write, and the
// steps the attacks across a restore share — a store on a parked client,
// A's claim and renewals, the cold copy, an abandoned write, the restore,
// B's claim and renewal, letting the parked write go. Each test keeps its
// own story and its own failure text; these functions only play the steps.

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

// park wraps c in a parked client. let lets its armed write go; it may be
// called more than once, and runs again when the test ends, so that no
// write is left waiting.
func park(t *testing.T, c client) (pc *parked, let func()) {
	pc = &parked{client: c, go_: make(chan struct{}), done: make(chan error, 1)}
	var once sync.Once
	let = func() { once.Do(func() { close(pc.go_) }) }
	t.Cleanup(let)
	return pc, let
}

// parkedStore is a store on a parked client of its own session.
func parkedStore(t *testing.T, e *zktest.Ensemble, path string) (*Store, *parked, func()) {
	t.Helper()
	pc, let := park(t, attackDial(t, e))
	s, err := newStore(pc, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return s, pc, let
}

// parkedConnect is a Connect store (which replaces a dead session) whose
// client is parked.
func parkedConnect(t *testing.T, e *zktest.Ensemble, path string) (*Store, *parked, func()) {
	t.Helper()
	s, err := Connect(e.Servers(), 4*time.Second, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	pc, let := park(t, s.c)
	s.c = pc
	return s, pc, let
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

// attackStore is a store on a session of its own: a process that saw
// nothing of the others.
func attackStore(t *testing.T, e *zktest.Ensemble, path string) *Store {
	t.Helper()
	s, err := New(attackDial(t, e), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return s
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

// attackPump writes n znodes under path on a fresh session, so that the
// restored servers' zxid passes every zxid the sessions of the test saw
// before the restore: a server refuses a session that saw a later zxid
// than its own (it may be behind the others, doc.go), and the old
// sessions must reconnect for the test to ask them anything.
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

// attackPath is a store path no other test uses, named for its kind.
func attackPath(kind string) string {
	return fmt.Sprintf("/attack%d/%s-%d", time.Now().UnixNano()%1e9, kind, attackSeq.Add(1))
}

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

// on5 is holder's claim request on machine 5 at its clock nowMs, for a
// 10 s lease.
func on5(holder string, nowMs int64) lease.ClaimRequest {
	return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 5, Hi: 5}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
}

// claimThenCopy: A claims 5 at now (data version 0) and renews it to
// now+10s (version 1); then the ensemble is stopped, copied cold and
// started again. It returns A's lease and the copy.
func claimThenCopy(t *testing.T, e *zktest.Ensemble, a *Store, now int64) (*lease.Lease, *zktest.Copy) {
	t.Helper()
	la, err := a.Claim(t.Context(), on5("a", now))
	if err != nil {
		t.Fatal(err)
	}
	if la, err = a.Extend(t.Context(), la, now+10_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	e.StopAll()
	cp := e.CopyData()
	e.StartAll()
	return la, cp
}

// settleRenew renews l to mark m, retrying while the session reconnects
// after the restarts: the renewed lease, or l and the error.
func settleRenew(t *testing.T, s *Store, l *lease.Lease, m int64) (*lease.Lease, error) {
	t.Helper()
	err := attackSettle(t, func(ctx context.Context) error {
		nl, err := s.Extend(ctx, l, m, 10*time.Second)
		if err == nil {
			l = nl
		}
		return err
	})
	return l, err
}

// renewEach renews A's lease to each mark in turn: writes after the copy,
// which the restore will lose.
func renewEach(t *testing.T, a *Store, la *lease.Lease, marks ...int64) *lease.Lease {
	t.Helper()
	for _, m := range marks {
		var err error
		if la, err = settleRenew(t, a, la, m); err != nil {
			t.Fatalf("A renews to %d: %v", m, err)
		}
	}
	return la
}

// abandon arms pc and runs f under a context that ends after d: the
// write f makes waits, parked, and f's call is abandoned. It returns f's
// error; the test judges it.
func abandon(t *testing.T, pc *parked, d time.Duration, f func(ctx context.Context) error) error {
	pc.armed.Store(true)
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	return f(ctx)
}

// abandonUnknown is abandon, for a call whose outcome must be unknown to
// its caller: an error that is neither lease.ErrLost nor
// lease.ErrRestored. what names the call in the failure.
func abandonUnknown(t *testing.T, pc *parked, d time.Duration, what string, f func(ctx context.Context) error) error {
	t.Helper()
	err := abandon(t, pc, d, f)
	if err == nil || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrRestored) {
		t.Fatalf("%s: %v, want an error of unknown outcome", what, err)
	}
	return err
}

// heldAfterRestore judges A's renewal after the restore, once it failed:
// it must fail as lease.ErrRestored or lease.ErrLost.
func heldAfterRestore(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, lease.ErrRestored) && !errors.Is(err, lease.ErrLost) {
		t.Fatalf("A's renewal after the restore: %v", err)
	}
	t.Logf("held: A's renewal after the restore: %v", err)
}

// outcome is what a call left waiting on a parked write returned.
type outcome struct {
	l   *lease.Lease
	err error
}

// parkCall arms pc and runs f in a goroutine, with no deadline (a frozen
// process's call), until its write is parked. The call's outcome comes on
// the channel once the write is let go.
func parkCall(t *testing.T, pc *parked, what string, f func(ctx context.Context) (*lease.Lease, error)) <-chan outcome {
	t.Helper()
	pc.armed.Store(true)
	out := make(chan outcome, 1)
	go func() {
		l, err := f(context.WithoutCancel(t.Context()))
		out <- outcome{l, err}
	}()
	if !pollFor(zktest.ReadyTimeout, func() bool { return pc.inSet.Load() }) {
		t.Fatalf("%s never reached its write", what)
	}
	return out
}

// awaitCall waits up to d for the outcome of a call parkCall left waiting.
func awaitCall(t *testing.T, out <-chan outcome, d time.Duration, what string) outcome {
	t.Helper()
	select {
	case r := <-out:
		return r
	case <-time.After(d):
		t.Fatalf("%s never returned", what)
		return outcome{}
	}
}

// restoreFrom restores the ensemble from the cold copy cp: all servers
// stopped, their data put back, started again.
func restoreFrom(e *zktest.Ensemble, cp *zktest.Copy) {
	e.StopAll()
	e.Restore(cp)
	e.StartAll()
}

// bClaims: B, a process that saw nothing before the restore, finds A's
// restored lease expired by its clock (A's mark now+10s) and claims 5.
func bClaims(t *testing.T, e *zktest.Ensemble, path string, now int64) (*Store, *lease.Lease) {
	t.Helper()
	b := attackStore(t, e, path)
	var lb *lease.Lease
	if err := attackSettle(t, func(ctx context.Context) error {
		l, err := b.Claim(ctx, on5("b", now+10_001))
		lb = l
		return err
	}); err != nil {
		t.Fatalf("B claims 5 after the restore: %v", err)
	}
	return b, lb
}

// bClaimsAndRenews is bClaims, then B renews once (to now+25s): B's
// record is written as many times as A's was after the copy.
func bClaimsAndRenews(t *testing.T, e *zktest.Ensemble, path string, now int64) (*Store, *lease.Lease) {
	t.Helper()
	b, lb := bClaims(t, e, path, now)
	lb, err := b.Extend(t.Context(), lb, now+25_000, 10*time.Second)
	if err != nil {
		t.Fatalf("B renews: %v", err)
	}
	return b, lb
}

// letOut moves the zxid past the old sessions' (other clients' writes
// under path-pump), so the parked client's session is served again, lets
// its write go and returns how the write ended.
func letOut(t *testing.T, e *zktest.Ensemble, path string, pc *parked, let func(), what string) error {
	t.Helper()
	attackPump(t, e, path+"-pump", 60)
	let()
	select {
	case err := <-pc.done:
		return err
	case <-time.After(zktest.ReadyTimeout):
		t.Fatalf("%s never went out", what)
		return nil
	}
}
