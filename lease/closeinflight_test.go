package lease_test

// Close and what is in flight: neither path can repeat an ID; before the
// fix both left a number held after Close until its lease expired.

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// cancelCommitStore is a stubStore whose claims, once in flight, wait for
// the test (proceed) or for the caller's context to end; either way the
// claim commits, and a canceled caller gets the context's error: a claim
// the store applied whose reply a cancel cut off, as a gRPC call to etcd
// canceled after the request reached the server.
type cancelCommitStore struct {
	*stubStore
	entered, proceed chan struct{}
	once             sync.Once
}

func (s *cancelCommitStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	s.once.Do(func() { close(s.entered) })
	select {
	case <-ctx.Done():
		s.stubStore.Claim(context.WithoutCancel(ctx), req)
		return nil, ctx.Err()
	case <-s.proceed:
		return s.stubStore.Claim(ctx, req)
	}
}

// Close during a claim in flight leaves no number held. Close used to
// cancel the claim with the keeper's loop: a claim the store applied whose
// reply the cancel cut off left the number held, by a keeper that had
// closed, until its lease expired (LeaseFor: 10 s on etcd, longer on the
// lease tables) — availability, not uniqueness: no grant was published on
// it. Close now waits for the claim's reply (at most RequestTimeout) and
// gives the number up.
func TestCloseDuringClaimLeavesNothingHeld(t *testing.T) {
	clk := fakeclock.New(t0)
	st := &cancelCommitStore{stubStore: &stubStore{machine: 5}, entered: make(chan struct{}), proceed: make(chan struct{})}
	k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk,
		RequestTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	<-st.entered
	closed := make(chan error, 1)
	go func() { closed <- k.Close(context.Background(), lease.UnknownIssued) }()
	untilClosing(t, k) // then the claim's reply arrives
	close(st.proceed)
	if err := <-closed; err != nil {
		t.Logf("Close: %v", err)
	}
	if rec, _ := st.Get(testCtx(t), 5); rec.Holder != "" {
		t.Errorf("after Close, machine 5 is still held by %q (token %d): the claim in flight at Close committed, and nobody releases it until its lease expires",
			rec.Holder, rec.Token)
	}
}

// slowReleaseStore is a stubStore whose releases wait for open.
type slowReleaseStore struct {
	*stubStore
	reached, open chan struct{}
}

func (s *slowReleaseStore) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	close(s.reached)
	<-s.open
	return s.stubStore.Release(ctx, l, markMs)
}

// A second Close waits for the first: it used to return at once, before
// the first had released the number. An owner
// whose shutdown paths both close the keeper (a signal handler and a
// deferred Close) and then close the store (node.Close does, right after
// Keeper.Close) cuts the first Close's release off: the number stays held
// until its lease expires. Availability only: the release mark is not at
// stake (the stored mark is the reservation, above every ID issued).
func TestSecondCloseWaitsForTheFirst(t *testing.T) {
	clk := fakeclock.New(t0)
	st := &slowReleaseStore{stubStore: &stubStore{machine: 5}, reached: make(chan struct{}), open: make(chan struct{})}
	k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Claimed(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- k.Close(context.Background(), lease.UnknownIssued) }()
	<-st.reached
	// The first Close is releasing: a second one whose context has ended
	// says so rather than report a finished Close.
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := k.Close(ended, lease.UnknownIssued); !errors.Is(err, context.Canceled) {
		t.Errorf("a second Close while the first released = %v; want it to say the first is still releasing (context.Canceled)", err)
	}
	// And one that waits returns once the first has released.
	second := make(chan error, 1)
	go func() { second <- k.Close(context.Background(), lease.UnknownIssued) }()
	close(st.open)
	if err := <-second; err != nil {
		t.Errorf("second Close = %v", err)
	}
	if rec, _ := st.Get(testCtx(t), 5); rec.Holder != "" {
		t.Errorf("the second Close returned while machine 5 was still held by %q", rec.Holder)
	}
	if err := <-first; err != nil {
		t.Errorf("first Close = %v", err)
	}
}

// untilClosing waits until Close has begun on k: it withdraws the grants,
// and the status says closed, before it waits for the keeper's loop.
func untilClosing(t *testing.T, k *lease.Keeper) {
	t.Helper()
	for k.Status().State != lease.StateClosed {
		select {
		case <-testCtx(t).Done():
			t.Fatal("Close never began")
		default:
			runtime.Gosched() // a condition polled, not a time waited
		}
	}
}
