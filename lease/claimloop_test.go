package lease_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/syncbuf"
	"github.com/snowfence/snowfence/lease"
)

// countingStub is a stubStore that counts Claim calls and can refuse
// every claim with refuse.
type countingStub struct {
	*stubStore
	mu     sync.Mutex
	calls  int
	refuse error
}

func (s *countingStub) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	s.mu.Lock()
	s.calls++
	refuse := s.refuse
	s.mu.Unlock()
	if refuse != nil {
		return nil, refuse
	}
	return s.stubStore.Claim(ctx, req)
}

func (s *countingStub) claims() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// A spare: StartKeeper returns at once while another holder holds the only
// number of the range; the generator refuses no-lease saying every number
// is held, ClaimError says ErrNoFreeNumber, and the keeper claims again
// with the spare's backoff (250 ms doubling to RenewEvery, here 2 s, each
// jittered to between half and all of it: three quarters with this
// jitter) until the number frees; then it claims it, logs so, and its
// generator issues once the claim's notice window has passed.
func TestKeeperSpareWaitsWithBackoff(t *testing.T) {
	lease.SetJitter(t, func() float64 { return 0.5 })
	clk := fakeclock.New(t0)
	st := &countingStub{stubStore: &stubStore{machine: 5, holder: "other"}}
	var logs syncbuf.Buffer
	k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "spare", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk,
		MaxWait: 2 * time.Second, // as MaxAhead: one store call per attempt
		Logger:  slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatalf("StartKeeper while every number is held: %v; want a keeper waiting as a spare", err)
	}
	t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) })
	g, err := snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	if err := clk.BlockUntilWaiters(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if n := st.claims(); n != 1 {
		t.Fatalf("%d claims before the clock moved; want 1", n)
	}
	if err := k.ClaimError(); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Errorf("ClaimError = %v; want ErrNoFreeNumber", err)
	}
	_, err = g.Next(context.Background())
	var fe *snowfence.FencedError
	if !errors.As(err, &fe) || fe.Reason != "no-lease" || !strings.Contains(fe.Detail, lease.ErrNoFreeNumber.Error()) {
		t.Errorf("generator while waiting: %v; want fenced no-lease saying no number is free", err)
	}
	if st := k.Status(); st.State != lease.StateClaiming || st.Machine != -1 {
		t.Errorf("status while waiting: %+v", st)
	}
	// The waits: 0.75 × 250 ms, 500 ms, 1 s, 2 s, 2 s (capped at RenewEvery).
	for i, d := range []time.Duration{187500 * time.Microsecond, 375 * time.Millisecond, 750 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond} {
		clk.Advance(d - time.Millisecond)
		if err := clk.BlockUntilWaiters(testCtx(t), 1); err != nil {
			t.Fatal(err)
		}
		if n := st.claims(); n != i+1 {
			t.Fatalf("wait %d: claimed again %s early (%d claims)", i+1, time.Millisecond, n)
		}
		clk.Advance(time.Millisecond)
		for st.claims() != i+2 {
			if err := clk.BlockUntilWaiters(testCtx(t), 1); err != nil {
				t.Fatalf("wait %d: no claim after %s: %v", i+1, d, err)
			}
		}
	}
	if !strings.Contains(logs.String(), "waiting for one to free") {
		t.Errorf("no wait logged:\n%s", logs.String())
	}
	st.stubStore.mu.Lock()
	st.stubStore.holder = "" // the other holder released it
	st.stubStore.mu.Unlock()
	clk.Advance(1500 * time.Millisecond)
	if err := k.Claimed(testCtx(t)); err != nil {
		t.Fatalf("Claimed after the number freed: %v", err)
	}
	if !strings.Contains(logs.String(), "a machine number freed") {
		t.Errorf("the claim after the wait was not logged:\n%s", logs.String())
	}
	for range etcdstore.MaxNoticeWindow/time.Second + 1 { // the claim's notice window, renewing meanwhile
		if err := clk.BlockUntilWaiters(testCtx(t), 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if _, err := g.Next(context.Background()); err != nil {
		t.Errorf("generator after the claim and its notice window: %v", err)
	}
}

// A first claim refused for a reason claiming again cannot fix (the fleet
// schedule differs) stops the keeper: StartKeeper returned a keeper, but
// Failed closes, Err and Claimed say ErrSchedule, Status says failed, the
// generator refuses with the reason, and no further claim is made however
// long the clock runs.
func TestKeeperFirstClaimRefusedStops(t *testing.T) {
	clk := fakeclock.New(t0)
	refusal := fmt.Errorf("%w: the fleet runs v1,v2@2027-01-01T00:00:00Z", lease.ErrSchedule)
	st := &countingStub{stubStore: &stubStore{machine: 5}, refuse: refusal}
	k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk})
	if err != nil {
		t.Fatalf("StartKeeper: %v; want a keeper (it claims in the background)", err)
	}
	t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) })
	g, err := snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-k.Failed():
	case <-testCtx(t).Done():
		t.Fatal("the keeper did not stop on its first claim's ErrSchedule")
	}
	if err := k.Err(); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("Err = %v; want ErrSchedule", err)
	}
	if err := k.Claimed(testCtx(t)); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("Claimed = %v; want ErrSchedule", err)
	}
	if s := k.Status(); s.State != lease.StateFailed || !strings.Contains(s.LastError, "fleet runs") {
		t.Errorf("Status = %+v; want failed with the refusal", s)
	}
	if _, err := g.Next(context.Background()); err == nil || !strings.Contains(err.Error(), "fleet runs") {
		t.Errorf("generator: %v; want a refusal naming the schedule error", err)
	}
	clk.Advance(time.Minute)
	if n := st.claims(); n != 1 {
		t.Errorf("%d claims; want the one refused", n)
	}
}

// A keeper that held a number and lost it does not stop on a refusal at its
// next claim: it claims again at its pace, as before.
func TestKeeperLaterRefusalRetries(t *testing.T) {
	clk := fakeclock.New(t0)
	st := &countingStub{stubStore: &stubStore{machine: 5}}
	k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) })
	if err := k.Claimed(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	st.refuse = fmt.Errorf("%w: changed under the holder", lease.ErrSchedule)
	st.mu.Unlock()
	st.stubStore.mu.Lock()
	st.stubStore.holder = "thief" // the next renewal finds the number lost
	st.stubStore.mu.Unlock()
	for range 20 {
		if err := clk.BlockUntilWaiters(testCtx(t), 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if err := k.Err(); err != nil {
		t.Errorf("Err = %v after a refusal at a later claim; want the keeper still claiming", err)
	}
	if n := st.claims(); n < 3 {
		t.Errorf("%d claims; want the later refusal retried", n)
	}
}
