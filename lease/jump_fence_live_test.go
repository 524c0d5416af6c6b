package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// metricsClock is a caller's wrapper of the system clock (counting reads,
// say): the same clock, another type.
type metricsClock struct{ snowfence.Clock }

// TestAttack5StartMonoAcrossReclaim: a keeper that loses its number and
// claims it again must wait the notice window after the new claim on the
// monotonic clock too, even when its wall clock is stepped forward just
// after that claim. A's generator has issued (so it sees the step as a
// jump, and waits a renewal after it — 2 s); StartMono must hold it to
// 8 s after the re-claim. Entry point lease.StartKeeper; etcd windows.
func TestAttack5StartMonoAcrossReclaim(t *testing.T) {
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

// TestAttack5PeriodicStepsLiveness: a VM guest whose clock loses time and
// is stepped forward 1.1 s every 5 s by its host agent (above the 1 s
// threshold each time), on the tables' timings (renewal every 10 s). Every
// step fences the generator until a renewal sent after it. Liveness: the
// longest run of refusals must stay within one renewal period (plus a
// step), as documented; the share of refused calls is reported. Entry
// point lease.StartKeeper; tables' windows.
func TestAttack5PeriodicStepsLiveness(t *testing.T) {
	for _, every := range []int{20, 240} { // 250 ms steps: every 5 s, every 60 s
		t.Run((time.Duration(every) * 250 * time.Millisecond).String(), func(t *testing.T) {
			_, _, sa, _ := attack4Stores(true)
			clk := fakeclock.New(t0)
			a := mustHolder(t, sa, clk, "a", lease.Range{Lo: 7, Hi: 7}, attack4Timings(true))
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

// TestAttack5IdleGeneratorAccumulatesSmallSteps: the forward jump was the
// wall clock's gain over the monotonic one between two of the generator's
// readings, however long apart (it is now the gain since the last
// acknowledged renewal, so a request 2.5 s after a step — a renewal since
// — issues). A host whose wall clock is stepped 300 ms
// forward every 5 s (a guest agent correcting a clock that loses 6 %; each
// step far under the 1 s threshold) serves a client that asks once a
// minute: every request's gap holds 3.6 s of steps, every request is a
// "jump", refused until a renewal after it — and the next request a minute
// later is another. Liveness: at least one of ten requests should issue.
// Entry point lease.StartKeeper; etcd timings.
func TestAttack5IdleGeneratorAccumulatesSmallSteps(t *testing.T) {
	_, _, sa, _ := attack4Stores(false)
	clk := fakeclock.New(t0)
	a := mustHolder(t, sa, clk, "a", lease.Range{Lo: 7, Hi: 7}, attack4Timings(false))
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
