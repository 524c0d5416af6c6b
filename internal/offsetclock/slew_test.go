package offsetclock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/offsetclock"
)

func TestSlewSpreadsTheChange(t *testing.T) {
	base, c := newClock()
	c.SetOffset(5 * time.Second)
	if err := c.Slew(-time.Second, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		advance time.Duration
		want    time.Duration
	}{
		{"at the start", 0, 5 * time.Second},
		{"a quarter in", 2500 * time.Millisecond, 4750 * time.Millisecond},
		{"half way", 2500 * time.Millisecond, 4500 * time.Millisecond},
		{"at the end", 5 * time.Second, 4 * time.Second},
		{"after the end", time.Hour, 4 * time.Second},
	} {
		base.Advance(tc.advance)
		if got := c.Offset(); got != tc.want {
			t.Errorf("%s: offset %v, want %v", tc.name, got, tc.want)
		}
		if got, want := c.Now().WallMs, base.Now().WallMs+tc.want.Milliseconds(); got != want {
			t.Errorf("%s: wall %d, want %d", tc.name, got, want)
		}
	}
	if got := c.Step(-time.Second); got != 3*time.Second {
		t.Errorf("step after the slew: offset %v, want 3s", got)
	}
}

func TestSlewNeverReadsBackwards(t *testing.T) {
	base, c := newClock()
	// 1 ms behind every 7 ms: the two roundings cross often.
	if err := c.Slew(-time.Second, 7*time.Second); err != nil {
		t.Fatal(err)
	}
	last := c.Now().WallMs
	first := last
	for range 100000 {
		base.Advance(73 * time.Microsecond)
		got := c.Now().WallMs
		if got < last {
			t.Fatalf("wall read %d after %d", got, last)
		}
		last = got
	}
	// 7.3 s of base time at 6/7 of the rate, less the millisecond either
	// end may hold.
	if ran, want := last-first, int64(7300-1000); ran < want-2 || ran > want+2 {
		t.Errorf("slewed wall ran %d ms in 7.3 s, want %d ± 2", ran, want)
	}
}

func TestSlewStepEndsIt(t *testing.T) {
	base, c := newClock()
	if err := c.Slew(-time.Second, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	base.Advance(5 * time.Second)
	if got := c.Step(-time.Second); got != -1500*time.Millisecond {
		t.Errorf("step half way through the slew: offset %v, want -1.5s", got)
	}
	base.Advance(10 * time.Second)
	if got := c.Offset(); got != -1500*time.Millisecond {
		t.Errorf("after the step the slew goes on: offset %v, want -1.5s", got)
	}
}

func TestSlewTooFast(t *testing.T) {
	_, c := newClock()
	for _, tc := range []struct {
		name    string
		d, over time.Duration
	}{
		{"stops the clock", -time.Second, time.Second},
		{"runs it backwards", -2 * time.Second, time.Second},
		{"twice as fast", time.Second, time.Second},
		{"no duration", 0, 0},
	} {
		if err := c.Slew(tc.d, tc.over); !errors.Is(err, offsetclock.ErrSlewTooFast) {
			t.Errorf("%s: Slew(%v, %v) = %v, want ErrSlewTooFast", tc.name, tc.d, tc.over, err)
		}
	}
	if got := c.Offset(); got != 0 {
		t.Errorf("refused slews moved the offset to %v", got)
	}
}

func TestWaitUntilDuringSlew(t *testing.T) {
	base, c := newClock()
	if err := c.Slew(-time.Second, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	target := c.Now().WallMs + 500
	ch := waitAsync(waitCtx(t), c, target)
	// 500 ms of base time is 250 ms of the slewed clock: not there yet.
	for range 50 {
		base.Advance(10 * time.Millisecond)
	}
	notYet(t, ch)
	for range 60 {
		base.Advance(10 * time.Millisecond)
	}
	res := receive(t, ch)
	if res.err != nil || res.r.WallMs < target {
		t.Fatalf("WaitUntil(%d) = %+v", target, res)
	}
}
