package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// hangStore is a stubStore whose renewals can hang, ignoring their
// context, as a store client with a bug would (hang), or fail at once, as
// a store that is down does (down).
type hangStore struct {
	*stubStore
	mu      sync.Mutex
	gate    chan struct{} // non-nil: Extend waits for it to close
	entered chan struct{} // closed when an Extend first waits on gate
	down    bool
}

func (s *hangStore) hang() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate, s.entered = make(chan struct{}), make(chan struct{})
}

func (s *hangStore) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.gate)
	s.gate = nil
}

func (s *hangStore) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *hangStore) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	s.mu.Lock()
	gate, entered, down := s.gate, s.entered, s.down
	if gate != nil {
		select {
		case <-entered:
		default:
			close(entered)
		}
	}
	s.mu.Unlock()
	if gate != nil {
		<-gate // the context is not looked at: the hang this test is about
	}
	if down {
		return nil, errors.New("store down")
	}
	return s.stubStore.Extend(ctx, l, markMs, leaseFor)
}

// startHeld starts a keeper of machine 5 on st and clk and waits until it
// holds the number and its loop sleeps on the clock.
func startHeld(t *testing.T, st lease.Store, clk *fakeclock.Clock) *lease.Keeper {
	t.Helper()
	k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) })
	if err := k.Claimed(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := clk.BlockUntilWaiters(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	return k
}

// A keeper whose loop hangs in a store call that ignores its context is
// stalled once the loop has not come round for longer than StallAfter (the
// minute's floor at etcd's timings, whose formula gives 16 s), and not a
// moment before; it is not once the call
// returns and the loop comes round again, nor after Close.
func TestKeeperStalledWhileAStoreCallHangs(t *testing.T) {
	clk := fakeclock.New(t0)
	st := &hangStore{stubStore: &stubStore{machine: 5}}
	k := startHeld(t, st, clk)
	if got, want := k.StallAfter(), time.Minute; got != want {
		t.Errorf("StallAfter at etcd's timings = %s; want %s (the floor over 2 × (2 s + 6 × 1 s))", got, want)
	}
	if since, stalled := k.Stalled(); stalled || since != 0 {
		t.Errorf("a keeper asleep between renewals: Stalled = %s, %v; want 0, false", since, stalled)
	}
	st.hang()
	clk.Advance(2 * time.Second) // the next renewal: it hangs
	<-st.entered
	// The loop last came round as it went to sleep, 2 s ago.
	if since, stalled := k.Stalled(); stalled || since != 2*time.Second {
		t.Errorf("hanging in a renewal due 2 s after the loop came round: Stalled = %s, %v; want 2s, false", since, stalled)
	}
	clk.Advance(k.StallAfter() - 2*time.Second)
	if since, stalled := k.Stalled(); stalled || since != k.StallAfter() {
		t.Errorf("hung for exactly StallAfter: Stalled = %s, %v; want %s, false", since, stalled, k.StallAfter())
	}
	clk.Advance(time.Millisecond)
	if since, stalled := k.Stalled(); !stalled || since != k.StallAfter()+time.Millisecond {
		t.Errorf("hung for StallAfter + 1 ms: Stalled = %s, %v; want %s, true", since, stalled, k.StallAfter()+time.Millisecond)
	}
	st.release()
	if err := clk.BlockUntilWaiters(testCtx(t), 1); err != nil { // the loop came round and sleeps again
		t.Fatal(err)
	}
	if since, stalled := k.Stalled(); stalled {
		t.Errorf("after the call returned: Stalled = %s, true; want false", since)
	}
	if err := k.Close(testCtx(t), lease.UnknownIssued); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * k.StallAfter())
	if since, stalled := k.Stalled(); stalled {
		t.Errorf("after Close: Stalled = %s, true; want false (a closed keeper's loop has stopped on purpose)", since)
	}
}

// advanceNotStalled advances clk by total in steps of step, each once the
// keeper's loop is asleep on the clock, and fails at the first stall; why
// says what the keeper was going through.
func advanceNotStalled(t *testing.T, k *lease.Keeper, clk *fakeclock.Clock, total, step time.Duration, why string) {
	t.Helper()
	for d := time.Duration(0); d < total; d += step {
		if err := clk.BlockUntilWaiters(testCtx(t), 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(step)
		if since, stalled := k.Stalled(); stalled {
			t.Fatalf("%s into %s: Stalled = %s, true; want false: the loop came round all along, and /livez would restart a holder whose refusal clears on its own", d+step, why, since)
		}
	}
}

// The refusals that clear on their own keep the loop coming round, so none
// is a stall: a store that is down for three times StallAfter (every
// renewal fails), a step of the wall clock back, and a spare
// waiting for a number; nor is a keeper whose first claim was refused for
// good (its owner is told through Failed and Err).
func TestKeeperNotStalledByRefusalsThatClear(t *testing.T) {
	t.Run("store down", func(t *testing.T) {
		clk := fakeclock.New(t0)
		st := &hangStore{stubStore: &stubStore{machine: 5}}
		k := startHeld(t, st, clk)
		st.setDown(true)
		advanceNotStalled(t, k, clk, 3*k.StallAfter(), 250*time.Millisecond, "a store outage")
		if s := k.Status(); s.RenewFailures == 0 {
			t.Errorf("Status after the outage = %+v; want renewal failures (the outage was not seen)", s)
		}
		clk.Step(-time.Minute)
		advanceNotStalled(t, k, clk, 3*k.StallAfter(), 250*time.Millisecond, "a store outage after a step of the wall clock back")
	})
	t.Run("spare", func(t *testing.T) {
		clk := fakeclock.New(t0)
		st := &stubStore{machine: 5, holder: "other"}
		k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "spare", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk,
			MaxWait: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) })
		advanceNotStalled(t, k, clk, 3*k.StallAfter(), 100*time.Millisecond, "a spare's wait for a number")
		if err := k.ClaimError(); !errors.Is(err, lease.ErrNoFreeNumber) {
			t.Errorf("ClaimError = %v; want ErrNoFreeNumber (the spare did not wait)", err)
		}
	})
	t.Run("first claim refused for good", func(t *testing.T) {
		clk := fakeclock.New(t0)
		st := &countingStub{stubStore: &stubStore{machine: 5}, refuse: fmt.Errorf("%w: the fleet runs v1,v2@2027-01-01T00:00:00Z", lease.ErrSchedule)}
		k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) })
		<-k.Failed()
		clk.Advance(10 * k.StallAfter())
		if since, stalled := k.Stalled(); stalled {
			t.Errorf("a failed keeper: Stalled = %s, true; want false", since)
		}
	})
}
