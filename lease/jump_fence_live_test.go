package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// metricsClock is a caller's wrapper of the system clock (counting reads,
// say): the same clock, another type.
type metricsClock struct{ snowfence.Clock }

// TestReclaimWaitsNoticeOnMonotonicClock: a keeper's re-claim after a loss
// waits its notice window on the monotonic clock as well as the wall clock.
// A keeper that loses its number and claims it again must wait the notice
// window after the new claim on the monotonic clock too, even when its wall
// clock is stepped forward just after that claim. A's generator has issued
// (so it sees the step as a jump, and waits a renewal after it — 2 s);
// StartMono must hold it to 8 s after the re-claim. Entry point
// lease.StartKeeper; etcd windows.
func TestReclaimWaitsNoticeOnMonotonicClock(t *testing.T) {
	s := &stubStore{machine: 7}
	clk := fakeclock.New(t0)
	a := mustHolder(t, s, clk, "a", lease.Range{Lo: 7, Hi: 7})
	a.mint(10)
	claims := a.k.Status().Claims
	s.steal()
	var reclaimed time.Duration
	for range 40 {
		a.step(250 * time.Millisecond)
		if a.k.Status().Claims > claims {
			reclaimed = clk.Now().Mono
			break
		}
	}
	if reclaimed == 0 {
		t.Fatalf("no re-claim: %+v", a.k.Status())
	}
	clk.Step(7 * time.Second)
	var first time.Duration
	for range 80 {
		if ids, err := a.g.NextN(context.Background(), 10); err == nil {
			a.ids = append(a.ids, ids...)
			first = clk.Now().Mono
			break
		}
		a.step(250 * time.Millisecond)
	}
	t.Logf("re-claimed; first ID %s later on the monotonic clock (refusals %v)", first-reclaimed, a.g.Stats().Refused)
	if first == 0 || first-reclaimed < 7750*time.Millisecond {
		t.Errorf("first ID %s after the re-claim on the monotonic clock, want at least the 8 s notice window (less a step)", first-reclaimed)
	}
}

// TestJumpFenceLivenessPeriodicSteps: a clock stepped forward over the
// threshold every 5 s leaves the generator refusing for at most one renewal
// period at a time. A VM guest whose clock loses time and is stepped forward
// 1.1 s every 5 s by its host agent (above the 1 s threshold each time), on
// the tables' timings (renewal every 10 s). Every step fences the generator
// until a renewal sent after it. Liveness: the longest run of refusals must
// stay within one renewal period (plus a step), as documented; the share of
// refused calls is reported. Entry point lease.StartKeeper; tables' windows.
func TestJumpFenceLivenessPeriodicSteps(t *testing.T) {
	for _, every := range []int{20, 240} { // 250 ms steps: every 5 s, every 60 s
		t.Run((time.Duration(every) * 250 * time.Millisecond).String(), func(t *testing.T) {
			_, _, sa, _ := restoreStores(true)
			clk := fakeclock.New(t0)
			a := mustHolder(t, sa, clk, "a", lease.Range{Lo: 7, Hi: 7}, kindTimings(true))
			a.mint(1)
			var calls, refused, streak, longest int
			for i := range 960 { // 4 min of 250 ms
				if i%every == every-1 {
					clk.Step(1100 * time.Millisecond)
				}
				calls++
				if tryMint(a, 1) == 0 {
					refused++
					streak++
					longest = max(longest, streak)
				} else {
					streak = 0
				}
				a.step(250 * time.Millisecond)
			}
			t.Logf("%d of %d calls refused (%.0f %%); longest refusal run %s; refusals %v",
				refused, calls, 100*float64(refused)/float64(calls), time.Duration(longest)*250*time.Millisecond, a.g.Stats().Refused)
			if time.Duration(longest)*250*time.Millisecond > 10*time.Second+250*time.Millisecond {
				t.Errorf("refused for %s at a stretch, longer than a renewal period", time.Duration(longest)*250*time.Millisecond)
			}
		})
	}
}

// TestJumpFenceLivenessIdleGeneratorSmallSteps: an idle generator on a clock
// stepped a little and often still issues (the jump is the gain since the
// last acknowledged renewal). The forward jump was the wall clock's gain
// over the monotonic one between two of the generator's readings, however
// long apart (it is now the gain since the last acknowledged renewal, so a
// request 2.5 s after a step — a renewal since — issues). A host whose wall
// clock is stepped 300 ms forward every 5 s (a guest agent correcting a
// clock that loses 6 %; each step far under the 1 s threshold) serves a
// client that asks once a minute: every request's gap holds 3.6 s of steps,
// every request is a "jump", refused until a renewal after it — and the next
// request a minute later is another. Liveness: at least one of ten requests
// should issue. Entry point lease.StartKeeper; etcd timings.
func TestJumpFenceLivenessIdleGeneratorSmallSteps(t *testing.T) {
	_, _, sa, _ := restoreStores(false)
	clk := fakeclock.New(t0)
	a := mustHolder(t, sa, clk, "a", lease.Range{Lo: 7, Hi: 7}, kindTimings(false))
	a.mint(1)
	var issued, asked int
	for i := range 2400 { // 10 min of 250 ms
		if i%20 == 19 {
			clk.Step(300 * time.Millisecond)
		}
		if i%240 == 229 { // 2.5 s after a step: a renewal (every 2 s) since
			asked++
			issued += tryMint(a, 1)
		}
		a.step(250 * time.Millisecond)
	}
	t.Logf("%d of %d once-a-minute requests issued (forward jumps seen %d, refusals %v)", issued, asked, a.g.Stats().ForwardJumps, a.g.Stats().Refused)
	if issued == 0 {
		t.Errorf("every once-a-minute request refused (clock-jumped) for %d minutes: the gaps between requests add up small steps", asked)
	}
}

// aheadClock is a caller's clock: the keeper's, with its wall clock read
// ahead by a constant (a clock corrected from another time source, say);
// its monotonic reading is the keeper's, so snowfence.New's check of the
// monotonic clocks passes.
type aheadClock struct {
	*fakeclock.Clock
	ahead time.Duration
}

func (c aheadClock) Now() snowfence.Reading {
	r := c.Clock.Now()
	r.WallMs += c.ahead.Milliseconds()
	return r
}

func (c aheadClock) WaitUntil(ctx context.Context, wallMs int64) (snowfence.Reading, error) {
	r, err := c.Clock.WaitUntil(ctx, wallMs-c.ahead.Milliseconds())
	r.WallMs += c.ahead.Milliseconds()
	return r, err
}

// TestJumpFenceLivenessGeneratorWallAhead: snowfence.New refuses a generator
// clock whose wall reading runs more than 5 ms ahead of its keeper's (which
// would be refused clock-jumped for ever), and a clock within that issues.
// Liveness. snowfence.New checks only that Config.Clock's monotonic reading
// is the keeper's; a Config.Clock whose wall clock reads more than 100 ms
// ahead of the keeper's is accepted, and then every request is refused
// (clock-jumped) for ever: every grant carries the keeper's wall reading,
// which the generator's runs ahead of by the offset, renewal after renewal.
// The refusal says "issuing resumes after the next renewal", which never
// comes true. Expected of the standards: such a configuration refused at
// start (like checkSameMono) or working. Entry point snowfence.New on a
// keeper; etcd windows. Control: 3 ms ahead (within the 5 ms New allows).
// New now refuses the 150 ms clock.
func TestJumpFenceLivenessGeneratorWallAhead(t *testing.T) {
	for _, c := range []struct {
		name  string
		ahead time.Duration
	}{{"150 ms ahead", 150 * time.Millisecond}, {"control: 3 ms ahead", 3 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			s := &stubStore{machine: 7}
			clk := fakeclock.New(t0)
			a, err := startHolderGen(t, s, clk, "a", lease.Range{Lo: 7, Hi: 7},
				func(gc *snowfence.Config) { gc.Clock = aheadClock{clk, c.ahead} }, kindTimings(false))
			if err != nil {
				t.Logf("held: New refused the clock: %v", err)
				return
			}
			for range 40 { // past the claim's notice window
				a.step(250 * time.Millisecond)
			}
			var ok, jumped int
			var last error
			for range 240 { // 60 s, 30 renewals
				ids, err := a.g.NextN(context.Background(), 1)
				var fe *snowfence.FencedError
				switch {
				case err == nil:
					ok += len(ids)
				case errors.As(err, &fe) && fe.Reason == "clock-jumped":
					jumped++
					last = err
				default:
					last = err
				}
				a.step(250 * time.Millisecond)
			}
			t.Logf("60 s of requests every 250 ms: %d issued, %d refused clock-jumped; last error: %v", ok, jumped, last)
			if ok == 0 {
				t.Errorf("liveness: New accepted a generator clock %s ahead of the keeper's wall clock, and it never issues (%d refusals in 60 s of acknowledged renewals every 2 s)",
					c.ahead, jumped)
			}
		})
	}
}
