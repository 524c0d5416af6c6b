package lease_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// The clock-jumped fence (the wall clock's gain over the monotonic one
// since the send of the last acknowledged renewal, refused past 100 ms)
// against steps that add up, steps in a renewal's flight and budgets that
// compound (found by an adversarial review). Each test: A holds 7 and
// mints; the store is restored and B, started at once, claims 7 and waits
// its notice floor; A's clock misbehaves in a way clock_step_restore_test.go
// and jump_fence_test.go do not try. Every test counts IDs issued twice.

// mintBoth mints on a and b every 250 ms for n rounds, calling at(i)
// before round i; it returns how many each minted.
func mintBoth(a, b *holder, n int, at func(i int)) (aN, bN int) {
	for i := range n {
		if at != nil {
			at(i)
		}
		aN += tryMint(a, 100)
		bN += tryMint(b, 100)
		a.step(250 * time.Millisecond)
		b.step(250 * time.Millisecond)
	}
	return aN, bN
}

// TestJumpFenceSumsStepBackThenForward: back-and-forward steps that each net
// under 100 ms are added up by the fence (measured from the renewal's
// readings). A is cut off after its last renewal, the store restored and 7
// claimed by B; A's wall clock is stepped back, then forward by a little
// more (a bad NTP source, then the correction), so that each
// back-and-forward pair nets +90 ms, under the fence's 100 ms — repeated,
// the net gains add up to well over it. The fence's formula is measured from
// the renewal's readings, so it should see the sum, not each pair. Entry
// point lease.StartKeeper; etcd and tables windows.
func TestJumpFenceSumsStepBackThenForward(t *testing.T) {
	for _, c := range []struct {
		name   string
		tables bool
		pairs  int
	}{
		{"etcd 1 pair", false, 1},
		{"etcd 8 pairs", false, 8},
		{"tables 1 pair", true, 1},
		{"tables 30 pairs", true, 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, cs, sa, sb := restoreStores(c.tables)
			clkA := fakeclock.New(t0)
			a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7}, kindTimings(c.tables))
			untilRenewed(a, clkA, a.step)
			a.mint(10)
			cs.cut.Store(true)
			b, _, claimed := restoreAndClaimB(t, s, sb, clkA.Time(), c.tables)
			done := 0
			aN, bN := mintBoth(a, b, 200, func(i int) { // 50 s
				if done < c.pairs {
					switch i % 4 {
					case 0:
						clkA.Step(-4 * time.Second)
					case 2:
						clkA.Step(4*time.Second + 90*time.Millisecond)
						done++
					}
				}
			})
			t.Logf("a minted %d after the restore (refusals %v); b minted %d, first at claim+%d ms; a's last at claim+%d ms",
				aN, a.g.Stats().Refused, bN, firstAfter(b.ids, claimed), lastAfter(a, claimed))
			checkUnique(t, a.ids, b.ids)
		})
	}
}

// lastAfter is the timestamp of a's last ID minus ms.
func lastAfter(a *holder, ms int64) int64 {
	if len(a.ids) == 0 {
		return -1
	}
	return a.last().Time().UnixMilli() - ms
}

// flightStub steps a clock while an extension is in flight: after the store
// committed it, before the keeper sees the reply.
type flightStub struct {
	lease.Store
	clk  *fakeclock.Clock
	step atomic.Int64 // nanoseconds to step at the next Extend, then 0
}

func (f *flightStub) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	nl, err := f.Store.Extend(ctx, l, markMs, leaseFor)
	if d := f.step.Swap(0); d != 0 {
		f.clk.Step(time.Duration(d))
	}
	return nl, err
}

// TestJumpFenceStepDuringRenewalFlight: a step while a renewal is in flight
// counts against the grant that renewal makes (it carries the send's
// readings). A's wall clock is stepped while a renewal is in flight (sent
// before the step, acknowledged after), then A is cut off, the store
// restored and B claims. "forward": +7 s in flight; the grant carries the
// send's readings, so the step counts. "back then forward": −5 s in flight,
// then +5.09 s after B's claim (net +90 ms, under the fence). Entry point
// lease.StartKeeper; etcd windows.
func TestJumpFenceStepDuringRenewalFlight(t *testing.T) {
	for _, c := range []struct {
		name          string
		inFlight, fwd time.Duration
	}{
		{"forward 7 s", 7 * time.Second, 0},
		{"back 5 s then forward 5.09 s", -5 * time.Second, 5090 * time.Millisecond},
		{"back 5 s then forward 5.2 s", -5 * time.Second, 5200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, cs, _, sb := restoreStores(false)
			clkA := fakeclock.New(t0)
			fs := &flightStub{Store: cs, clk: clkA}
			a := mustHolder(t, fs, clkA, "a", lease.Range{Lo: 7, Hi: 7}, kindTimings(false))
			untilRenewed(a, clkA, a.step)
			a.mint(10)
			fs.step.Store(int64(c.inFlight))
			for range 40 {
				a.step(250 * time.Millisecond)
				if fs.step.Load() == 0 {
					break
				}
			}
			if fs.step.Load() != 0 {
				t.Fatal("no renewal in 10 s")
			}
			a.step(time.Millisecond) // the keeper publishes the grant
			cs.cut.Store(true)
			b, _, claimed := restoreAndClaimB(t, s, sb, clkA.Time().Add(-c.inFlight), false)
			aN, bN := mintBoth(a, b, 120, func(i int) { // 30 s
				if i == 2 && c.fwd != 0 {
					clkA.Step(c.fwd)
				}
			})
			t.Logf("a minted %d after the restore (refusals %v); b minted %d, first at claim+%d ms; a's last at claim+%d ms",
				aN, a.g.Stats().Refused, bN, firstAfter(b.ids, claimed), lastAfter(a, claimed))
			checkUnique(t, a.ids, b.ids)
		})
	}
}

// TestJumpFenceTablesBudgetsCompounded: on the tables' longest self-fence, a
// 1 s clock disagreement plus a step just under the fence still end the
// cut-off holder before the claimer's floor. The tables' longest self-fence
// (253.636 s, NoticeWindow 4 min 39.9996 s of the 4 min 40 s every claim
// waits), A's wall clock 1 s ahead of B's (the clock-agreement budget, from
// the start), and a 99 ms step after A's last renewal (under the fence); A
// cut off. A's last timestamp is bounded by renewal send + 253.636 s + 99 ms
// on its clock, 1 s ahead of B's: claim + 254.8 s at most, against B's
// claim + 280 s.
func TestJumpFenceTablesBudgetsCompounded(t *testing.T) {
	s, cs, sa, sb := restoreStores(true)
	clkA := fakeclock.New(t0)
	a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7}, kindTimings(true),
		func(kc *lease.KeeperConfig) { kc.SelfFence = 253636 * time.Millisecond })
	untilRenewed(a, clkA, a.step)
	a.mint(10)
	cs.cut.Store(true)
	b, _, claimed := restoreAndClaimB(t, s, sb, clkA.Time().Add(-time.Second), true)
	clkA.Step(99 * time.Millisecond)
	aN, bN := mintBoth(a, b, 1240, nil) // 310 s: past B's floor
	t.Logf("a minted %d after the restore (refusals %v); b minted %d, first at claim+%d ms; a's last at claim+%d ms",
		aN, a.g.Stats().Refused, bN, firstAfter(b.ids, claimed), lastAfter(a, claimed))
	checkUnique(t, a.ids, b.ids)
}
