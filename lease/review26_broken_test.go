package lease_test

// Review of issue 26: FAILING demonstrations of what the review report
// calls broken, left for the lead to decide on (fix, or delete with the
// report's reasoning). Neither can repeat an ID; both leave a number held
// after Close until its lease expires.

import (
	"context"
	"testing"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// Hypothesis (broken: availability, not uniqueness): Close cancels the
// keeper's loop, and with it a claim in flight. A claim the store applied
// whose reply was lost to the cancel leaves the number held in the store
// by a keeper that has closed: nobody releases it, and it stays held until
// its lease expires (LeaseFor: 10 s on etcd, longer on the lease tables).
// Nothing was issued on it (no grant was ever published), so no ID can
// repeat; a spare restarted at once, or the next holder of a full range,
// waits that long. TestKeeperCloseRacingClaim covers the reply that
// arrives after Close; this is the reply that never arrives. (A fix that
// no longer cancels a claim in flight — Close waits for it, up to
// RequestTimeout, and the closed check releases it — makes this store
// wait for the RequestTimeout instead, whose expiry it also takes as a
// lost reply: the test must then model a reply lost to the timeout only
// as the inherent case it is.)
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
