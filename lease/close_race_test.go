package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// Close while a claim is in flight: the claim commits in the store but its
// reply arrives only after Close has run and found no lease to release. The
// keeper used to install that lease after Close (Status "held") and leave
// the number held until its lease expired. Now it releases it at once and
// stays closed.
func TestKeeperCloseRacingClaim(t *testing.T) {
	c := etcdtest.Start(t, 1)
	entered, proceed := make(chan struct{}), make(chan struct{})
	w := &wrapStore{Store: newStore(t, c.Endpoints())}
	w.gate = func(n int, ctx context.Context) context.Context {
		if n == 0 {
			return ctx // StartKeeper's claim goes through
		}
		if n == 1 {
			close(entered)
			// Hold the claim until Close has begun, then let it commit
			// as if its reply were late. (Close does not cancel a
			// claim in flight: it waits for its reply.)
			<-proceed
			return ctx
		}
		return ctx
	}
	clk := fakeclock.New(t0)
	// A long request timeout: only Close ends the held claim's context.
	h := mustHolder(t, w, clk, "a", lease.Range{Lo: 3, Hi: 4},
		func(kc *lease.KeeperConfig) { kc.RequestTimeout = time.Minute })
	first := h.k.Status().Machine
	h.mint(5)
	// Quarantine the number held: the next renewal loses it, and the
	// keeper claims the other number at once — the claim held up above.
	if err := w.admin().Quarantine(testCtx(t), first); err != nil {
		t.Fatal(err)
	}
	h.settle()
	clk.Advance(2 * time.Second)
	select {
	case <-entered:
	case <-testCtx(t).Done():
		t.Fatal("the keeper never claimed again after the quarantine")
	}
	closed := make(chan error, 1)
	go func() { closed <- h.k.Close(testCtx(t), h.g.LastIssued()) }()
	untilClosing(t, h.k)
	close(proceed)
	if err := <-closed; err != nil {
		t.Logf("Close: %v", err)
	}
	other := 7 - first // 3 or 4
	rec, err := w.Get(testCtx(t), other)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Held() {
		t.Errorf("after Close, machine %d is still held (%+v): the claim that completed after Close was installed and leaked", other, rec)
	}
	if st := h.k.Status(); st.State != lease.StateClosed {
		t.Errorf("status after Close = %+v, want closed", st)
	}
	if g, err := h.k.Grant(); g != nil || err == nil {
		t.Errorf("grant after Close = %+v, %v; want none", g, err)
	}
	if n := len(w.requests()); n != 2 {
		t.Errorf("%d claims, want 2 (the first, and the one Close raced)", n)
	}
}
