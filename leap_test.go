package snowfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

// leapMidnight is the end of a UTC day with an inserted leap second.
var leapMidnight = time.Date(2026, 12, 31, 24, 0, 0, 0, time.UTC)

// An inserted leap second under a stepping time source: the kernel,
// told by the daemon (STA_INS), steps the wall clock back 1 s at the end
// of the day. The generator (default policy, kernel synchronised) refuses
// for at most that second — the clock is behind the last issued
// timestamp — and issues no ID twice; Health warns while the leap is
// announced.
func TestLeapSecondSteppedRefusesAtMostOneSecond(t *testing.T) {
	k := newKernel(synced)
	// No waiting out of small steps back (the fake clock stands still
	// while a call waits): the whole step back is refused, and counted.
	g, clk := newPolicyGen(t, k, leapMidnight.Add(-2*time.Second), func(c *snowfence.Config) { c.MaxBackwardWait = -1 })
	ctx := context.Background()
	k.set(snowfence.ClockStatus{Synchronized: true, MaxError: time.Millisecond, Leap: snowfence.LeapInsert})
	clk.Advance(time.Second)
	if h := g.Health(); !h.Issuing || h.Clock.Leap != snowfence.LeapInsert || !strings.Contains(strings.Join(h.Warnings, ";"), "leap second") {
		t.Fatalf("Health before the leap = %+v; want issuing, clock.leap insert, a leap-second warning", h)
	}
	seen := map[snowfence.ID]bool{}
	var last snowfence.ID
	var firstRefusal, lastRefusal time.Duration = -1, -1
	const step = 250 * time.Microsecond
	for true_ := time.Duration(0); true_ < 4*time.Second; true_ += step {
		// True time runs from 1 s before midnight; the kernel steps
		// back at midnight (23:59:60 reads as 23:59:59 again).
		if true_ == time.Second {
			clk.Step(-time.Second)
			k.set(snowfence.ClockStatus{Synchronized: true, MaxError: time.Millisecond, Leap: snowfence.LeapInProgress})
		}
		if true_ == 2*time.Second {
			k.set(snowfence.ClockStatus{Synchronized: true, MaxError: time.Millisecond, Leap: snowfence.LeapDone})
		}
		for range 3 {
			id, err := g.Next(ctx)
			if err != nil {
				if !errors.Is(err, snowfence.ErrClockBackwards) {
					t.Fatalf("at true time %s: %v; want only clock-backwards refusals", true_, err)
				}
				if firstRefusal < 0 {
					firstRefusal = true_
				}
				lastRefusal = true_
				continue
			}
			if seen[id] || id <= last {
				t.Fatalf("at true time %s: ID %d after %d (seen before: %v)", true_, id, last, seen[id])
			}
			seen[id], last = true, id
		}
		clk.Advance(step)
	}
	if firstRefusal < 0 {
		t.Fatal("no refusal: the leap second's step back was not seen")
	}
	if d := lastRefusal - firstRefusal; firstRefusal < time.Second || d >= time.Second {
		t.Fatalf("refused from %s to %s of true time: want within the leap second", firstRefusal, lastRefusal)
	}
	t.Logf("%d IDs, refused for %s of true time from the step", len(seen), lastRefusal-firstRefusal+step)
}

// A smeared leap second: the time daemon slows the clock (wall and
// monotonic alike, as the kernel's slew does) so that it loses the second
// over the smear, and the kernel hears of no leap. Nothing is refused.
// Here chrony's leapsecmode slew at maxslewrate 1000 ppm: 1000 s.
func TestLeapSecondSmearedRefusesNothing(t *testing.T) {
	k := newKernel(synced)
	const smear = 1000 * time.Second
	g, clk := newPolicyGen(t, k, leapMidnight.Add(-smear/2), nil)
	ctx := context.Background()
	clk.SetRate(1 - 0.001)
	var last snowfence.ID
	n := 0
	for true_ := time.Duration(0); true_ < smear; true_ += 10 * time.Millisecond {
		id, err := g.Next(ctx)
		if err != nil {
			t.Fatalf("at %s into the smear: %v; want no refusal", true_, err)
		}
		if id <= last {
			t.Fatalf("at %s into the smear: ID %d after %d", true_, id, last)
		}
		last, n = id, n+1
		clk.Advance(10 * time.Millisecond)
	}
	clk.SetRate(1)
	if h := g.Health(); !h.Issuing || len(h.Warnings) != 0 {
		t.Fatalf("Health after the smear = %+v; want issuing, no warnings", h)
	}
	if lag := leapMidnight.Add(smear / 2).Sub(clk.Time()); lag != time.Second {
		t.Fatalf("the smear lost %s, want 1 s", lag)
	}
	t.Logf("%d IDs over a %s smear, none refused", n, smear)
}
