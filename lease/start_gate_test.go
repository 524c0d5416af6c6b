package lease_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// TestStepBackBeforeStartKeepsRenewing (liveness): a keeper whose wall clock
// steps back behind a hold's start instant after it started keeps renewing
// that hold at its pace. The keeper's loop holds off a hold until its start
// instant on the wall clock (for a later layout, Lead before its cutover;
// for the first, the instant StartKeeper planned), which is right before its
// first claim and wrong after: a number held must be renewed at its pace
// whatever the wall clock reads. A's wall clock is stepped back 30 s, 10 s
// after its keeper started (a clock that was ahead at boot, corrected by
// NTP): its renewals must go on. Held off, A's grant fences
// (renewal-overdue) 5 s after its last renewal, its etcd lease expires 10 s
// after it and the number goes to whoever claims it; A renews again only
// once the wall clock is back at its start, then loses the number, claims
// another and waits its notice window (8 s) — an outage of the step's size
// plus the notice window for a holder that issued nothing since its start,
// and the number lost in any case.
func TestStepBackBeforeStartKeepsRenewing(t *testing.T) {
	s := &stubStore{machine: 7}
	clk := fakeclock.New(t0)
	a := mustHolder(t, s, clk, "a", lease.Range{Lo: 7, Hi: 7})
	untilRenewed(a, clk, a.step)
	clk.Step(-30 * time.Second)
	before := a.k.Status().LastRenewal
	for range 12 { // 3 s: past a renewal period (2 s)
		a.step(250 * time.Millisecond)
	}
	if st := a.k.Status(); !st.LastRenewal.Before(before) {
		t.Fatalf("no renewal in 3 s after the wall clock stepped back 30 s, before the keeper's start: last renewal still at %s (status %+v)",
			st.LastRenewal.Format(time.RFC3339Nano), st)
	}
}
