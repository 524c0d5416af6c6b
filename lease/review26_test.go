package lease_test

// Review of issue 26 (the claim moved into the keeper's run loop): Close
// racing the keeper's claims. See the review report for the verdicts.

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

// lostReplyStore is a stubStore whose claims, once armed, wait until the
// caller's context ends (Close cancels the keeper's loop), then commit on
// the stub and return the context's error: a claim the store applied whose
// reply the canceled caller never saw, as a gRPC call to etcd canceled
// after the request reached the server.
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
	// A long request timeout: only Close ends the claim's context.
	k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: clk,
		RequestTimeout: time.Minute})
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

// Hypothesis (broken: availability, not uniqueness): Close cancels the
// keeper's loop, and with it a claim in flight. A claim the store applied
// whose reply was lost to the cancel leaves the number held in the store
// by a keeper that has closed: nobody releases it, and it stays held until
// its lease expires (LeaseFor: 10 s on etcd, longer on the lease tables).
// Nothing was issued on it (no grant was ever published), so no ID can
// repeat; a spare restarted at once, or the next holder of a full range,
// waits that long. TestKeeperCloseRacingClaim covers the reply that
// arrives after Close; this is the reply that never arrives.
func TestReview26CloseLeaksClaimWhoseReplyWasCanceled(t *testing.T) {
	st := &lostReplyStore{stubStore: &stubStore{machine: 5}, commit: true, entered: make(chan struct{})}
	k, g := startOnLostReply(t, st)
	g.Close()
	if err := k.Close(testCtx(t), g.LastIssued()); err != nil {
		t.Logf("Close: %v", err)
	}
	rec, _ := st.Get(testCtx(t), 5)
	if rec.Holder != "" {
		t.Errorf("after Close, machine 5 is still held by %q (token %d): the claim Close canceled committed, and nobody releases it until its lease expires",
			rec.Holder, rec.Token)
	}
}

// Hypothesis (broken: hygiene): after Close during the keeper's first
// claim, the refusal should say the keeper closed. The claim's error path
// (hold.claim, Claims == 0) overwrites the reason Close set (errClosed)
// with "the last claim failed (retrying): context canceled", and
// ClaimError reports the cancel as the last claim's error: an operator or
// a caller reading the refusal after Shutdown is told the keeper retries.
func TestReview26CloseDuringFirstClaimSaysClosed(t *testing.T) {
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
func TestReview26CloseAroundFirstClaimHoldsNothing(t *testing.T) {
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
func TestReview26SpareClosedClaimsNothingAfter(t *testing.T) {
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

// Hypothesis (broken: hygiene): "A second Close does nothing" — it also
// returns at once, before the first has released the number. An owner
// whose shutdown paths both close the keeper (a signal handler and a
// deferred Close) and then close the store (node.Close does, right after
// Keeper.Close) cuts the first Close's release off: the number stays held
// until its lease expires. Availability only: the release mark is not at
// stake (the stored mark is the reservation, above every ID issued).
func TestReview26SecondCloseReturnsBeforeRelease(t *testing.T) {
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
	second := k.Close(context.Background(), lease.UnknownIssued)
	rec, _ := st.Get(testCtx(t), 5)
	close(st.open)
	<-first
	if second == nil && rec.Holder != "" {
		t.Errorf("the second Close returned (nil) while the first still released: machine 5 still held by %q", rec.Holder)
	}
}
