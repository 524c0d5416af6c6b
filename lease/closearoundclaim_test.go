package lease_test

// Close racing the keeper's claims, which run in the keeper's loop: nothing
// stays held, nothing is issued, and the refusal says the keeper closed.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// lostReplyStore is a stubStore whose claims wait until the caller's
// context ends (the request timeout), then commit on the stub if commit is
// set, and return the context's error: a claim whose reply never came.
type lostReplyStore struct {
	*stubStore
	commit  bool          // commit the claim after the cancel (false: it never reached the store)
	entered chan struct{} // closed when the first claim arrives
	once    sync.Once
}

func (s *lostReplyStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	s.once.Do(func() { close(s.entered) })
	<-ctx.Done()
	if s.commit {
		s.stubStore.Claim(context.WithoutCancel(ctx), req)
	}
	return nil, ctx.Err()
}

// startOnLostReply starts a keeper on st whose first claim is in flight
// (held up by st) when it returns.
func startOnLostReply(t *testing.T, st *lostReplyStore) (*lease.Keeper, *snowfence.Generator) {
	t.Helper()
	clk := fakeclock.New(t0)
	// A short request timeout: Close waits for the claim in flight, which
	// st answers only when its context ends.
	k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk,
		RequestTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) })
	g, err := snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.entered:
	case <-testCtx(t).Done():
		t.Fatal("the keeper never claimed")
	}
	return k, g
}

// After Close during the keeper's first claim, the refusal says the keeper
// closed. The claim's error path (hold.claim, Claims == 0) overwrote the
// reason Close set (errClosed) with "the last claim failed (retrying):
// context canceled": a caller reading the refusal after Shutdown was told
// the keeper retries (fails on 8a22faf; fixed in hold.claim).
func TestCloseDuringFirstClaimSaysClosed(t *testing.T) {
	st := &lostReplyStore{stubStore: &stubStore{machine: 5}, entered: make(chan struct{})}
	k, _ := startOnLostReply(t, st)
	if err := k.Close(testCtx(t), 0); err != nil {
		t.Fatal(err)
	}
	if s := k.Status(); s.State != lease.StateClosed {
		t.Errorf("Status after Close = %+v; want closed", s)
	}
	g, err := k.Grant()
	if g != nil || err == nil || !strings.Contains(err.Error(), "keeper closed") || strings.Contains(err.Error(), "retrying") {
		t.Errorf("Grant after Close = %v, %v; want no grant, the keeper closed", g, err)
	}
	if err := k.ClaimError(); err != nil {
		t.Errorf("ClaimError after Close = %v; want nil (no claim is pending)", err)
	}
}

// Hypothesis (holds): Close at any moment around the first claim — before
// the loop started it, while it is in flight on a store that ignores the
// context, after it committed — leaves nothing held, no grant, and Claimed
// answers closed. A claim that completes after Close is released at once
// (hold.claim's closed check), one not started is never made.
func TestCloseAroundFirstClaimHoldsNothing(t *testing.T) {
	for i := range 200 {
		clk := fakeclock.New(t0)
		st := &stubStore{machine: 5}
		k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		g, err := snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			k.Claimed(testCtx(t))
		}
		g.Close()
		if err := k.Close(testCtx(t), g.LastIssued()); err != nil {
			t.Fatalf("round %d: Close: %v", i, err)
		}
		if rec, _ := st.Get(testCtx(t), 5); rec.Holder != "" {
			t.Fatalf("round %d: machine 5 held by %q after Close", i, rec.Holder)
		}
		if gr, err := k.Grant(); gr != nil || err == nil {
			t.Fatalf("round %d: grant after Close: %+v, %v", i, gr, err)
		}
		if err := k.Claimed(testCtx(t)); err == nil {
			t.Fatalf("round %d: Claimed after Close = nil", i)
		}
		select {
		case <-k.Closed():
		default:
			t.Fatalf("round %d: Closed not closed after Close returned", i)
		}
	}
}

// Hypothesis (holds): a spare waiting on a full range, closed while it
// waits, makes no claim after Close returns, and its generator never
// issues: the loop is gone (Closed), and a number freed afterwards stays
// free.
func TestSpareClosedClaimsNothingAfter(t *testing.T) {
	lease.SetJitter(t, func() float64 { return 0.5 })
	clk := fakeclock.New(t0)
	st := &countingStub{stubStore: &stubStore{machine: 5, holder: "other"}}
	k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "spare", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk,
		MaxWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	g, err := snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.ClaimedOrFull(testCtx(t)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Fatalf("ClaimedOrFull = %v; want ErrNoFreeNumber", err)
	}
	g.Close()
	if err := k.Close(testCtx(t), g.LastIssued()); err != nil {
		t.Fatal(err)
	}
	n := st.claims()
	st.steal() // the number frees
	clk.Advance(time.Minute)
	if m := st.claims(); m != n {
		t.Errorf("%d claims after Close; want none", m-n)
	}
	if rec, _ := st.Get(testCtx(t), 5); rec.Holder != "" {
		t.Errorf("machine 5 held by %q after the spare closed", rec.Holder)
	}
}
