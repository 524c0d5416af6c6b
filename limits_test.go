package snowfence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

func TestLimits(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	short := snowfence.Layout{Name: "t30", Epoch: epoch, Unit: 10 * time.Millisecond, TimeBits: 30, MachineBits: 21, SequenceBits: 12}
	for _, c := range []struct {
		name string
		cfg  snowfence.Config
		want snowfence.Limits
	}{
		{"defaults", snowfence.Config{}, snowfence.Limits{
			ClockPolicy: snowfence.ClockRequire, MaxClockError: 5 * time.Millisecond,
			TimestampsEnd: epoch.Add(time.Duration(1<<41) * time.Millisecond), ExhaustionWarning: 5 * 365 * 24 * time.Hour}},
		{"set", snowfence.Config{ClockPolicy: snowfence.ClockRequire, MaxClockError: 20 * time.Millisecond,
			Schedule: snowfence.MustSchedule(snowfence.Step{Layout: short}), ExhaustionWarning: 48 * time.Hour}, snowfence.Limits{
			ClockPolicy: snowfence.ClockRequire, MaxClockError: 20 * time.Millisecond,
			TimestampsEnd: epoch.Add(time.Duration(1<<30) * 10 * time.Millisecond), ExhaustionWarning: 48 * time.Hour}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Lease = snowfence.Static(1, 0)
			c.cfg.Clock = fakeclock.New(start)
			g, err := snowfence.New(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Limits(); got != c.want {
				t.Errorf("Limits() = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestLimitsAgreeWithHealth checks that the warning window Limits reports
// is the one Health warns in: a rule that compares the two fires when
// Health starts warning, give or take one timestamp unit.
func TestLimitsAgreeWithHealth(t *testing.T) {
	l := snowfence.Layout{Name: "t30", Epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Unit: time.Millisecond, TimeBits: 30, MachineBits: 21, SequenceBits: 12}
	clk := fakeclock.New(l.Epoch)
	g, err := snowfence.New(snowfence.Config{Lease: snowfence.Static(1, 0), Clock: clk, ClockPolicy: snowfence.ClockOff,
		Schedule: snowfence.MustSchedule(snowfence.Step{Layout: l}), ExhaustionWarning: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	lim := g.Limits()
	if want := l.LastInstant().Add(time.Millisecond); !lim.TimestampsEnd.Equal(want) {
		t.Fatalf("TimestampsEnd %s, want the layout's last instant + 1 unit %s", lim.TimestampsEnd, want)
	}
	warns := func() bool {
		for _, w := range g.Health().Warnings {
			if strings.Contains(w, "timestamp runs out") {
				return true
			}
		}
		return false
	}
	onset := lim.TimestampsEnd.Add(-lim.ExhaustionWarning)
	for _, c := range []struct {
		at   time.Time
		want bool
	}{
		{onset.Add(-2 * time.Millisecond), false},
		{onset, true},
		{lim.TimestampsEnd.Add(-time.Millisecond), true},
	} {
		clk.Set(c.at)
		if got := warns(); got != c.want {
			t.Errorf("at %s (warning from %s): Health warns %v, want %v", c.at.Format(time.RFC3339Nano), onset.Format(time.RFC3339Nano), got, c.want)
		}
	}
}
