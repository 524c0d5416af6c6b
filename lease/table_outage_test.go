package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// TestTableHolderRidesOutOutage: a holder on the lease tables' default
// timings, cut off from its table, keeps issuing through a 4-minute outage
// and stops before its lease's expiry less the margin, with the keeper's
// clock-rate budget (8 % fast or slow: stopping at S with S × 1.08 ≤
// (LeaseFor − Margin) × 0.92 after the send of its last acknowledged
// renewal), and never issues after. It steps the fake clock a second at a
// time from the cut. Fails with the old default self-fence of 30 s (the
// holder refused 30 s into the outage).
func TestTableHolderRidesOutOutage(t *testing.T) {
	tt := lease.TableTimings()
	_, cs, sa, _ := restoreStores(true)
	clk := fakeclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	a := mustHolder(t, sa, clk, "a", lease.Range{Lo: 7, Hi: 7}, kindTimings(true))
	a.mint(10)
	a.step(tt.RenewEvery) // a renewal is acknowledged
	a.mint(10)
	lastAck := a.k.Status().LastRenewal
	cs.cut.Store(true)
	cutAt := clk.Time()
	// The bound: expiry − margin, with the keeper's clock-rate budget.
	bound := time.Duration(float64(tt.LeaseFor-tt.Margin) * 0.92 / 1.08)
	var lastIssue time.Time
	for clk.Time().Before(cutAt.Add(tt.LeaseFor)) {
		if _, err := a.g.NextN(context.Background(), 1); err == nil {
			lastIssue = clk.Time()
			if since := lastIssue.Sub(lastAck); since >= bound {
				t.Fatalf("issued %s after the last acknowledged renewal, past expiry − margin with the clock budget (%s)", since, bound)
			}
		} else if !isFenced(err) {
			t.Fatalf("refused with %v, want fenced", err)
		}
		a.step(time.Second)
	}
	if ride := lastIssue.Sub(cutAt); ride < 4*time.Minute {
		t.Fatalf("the holder cut off at %s stopped issuing %s into the outage (last renewal acknowledged %s before the cut); want it to ride out 4 minutes (self-fence %s)",
			cutAt.Format(time.TimeOnly), ride, cutAt.Sub(lastAck), tt.SelfFence)
	}
	t.Logf("last renewal sent %s, cut at %s, last ID at %s (%s after the renewal), bound %s", lastAck.Format(time.TimeOnly), cutAt.Format(time.TimeOnly),
		lastIssue.Format(time.TimeOnly), lastIssue.Sub(lastAck), bound)
}

// TestTableOutageAndRestoredClaim: what the long table self-fence costs
// is paid by the notice window. A, on the tables' default timings, is cut
// off from its table, the table is restored to before A's claim, and B, a
// process started at once, claims A's number and waits the tables'
// MaxNoticeWindow before its first grant; A rides out the outage until its
// self-fence (4 min 10 s), so B's first ID must come after A's last. Both
// mint every second for 6 minutes; no ID twice, and both issue. Fails with
// snowfence_revert_notice (B issues at once, beside A).
func TestTableOutageAndRestoredClaim(t *testing.T) {
	s, cs, sa, sb := restoreStores(true)
	clkA := fakeclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7}, kindTimings(true))
	a.mint(10)
	cs.cut.Store(true)
	cutAt := clkA.Time()
	b, clkB, _ := restoreAndClaimB(t, s, sb, clkA.Time(), true)
	var aLast, bFirst time.Time
	for range 6 * 60 {
		if tryMint(a, 5) > 0 {
			aLast = clkA.Time()
		}
		if tryMint(b, 5) > 0 && bFirst.IsZero() {
			bFirst = clkB.Time()
		}
		a.step(time.Second)
		b.step(time.Second)
	}
	if aLast.Sub(cutAt) < 4*time.Minute || bFirst.IsZero() {
		t.Fatalf("A issued until %s into the outage, B first at %v: the test needs A to ride out 4 minutes and B to issue", aLast.Sub(cutAt), bFirst)
	}
	t.Logf("A cut at %s, last ID at %s; B's first at %s", cutAt.Format(time.TimeOnly), aLast.Format(time.TimeOnly), bFirst.Format(time.TimeOnly))
	checkUnique(t, a.ids, b.ids)
}
