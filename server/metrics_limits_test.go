package server

import (
	"bufio"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

// sample returns the value of the series named exactly series (name and
// labels as exposed) in a text exposition, and whether it is there.
func sample(t *testing.T, body, series string) (float64, bool) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), series+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(rest, 64)
		if err != nil {
			t.Fatalf("series %s: value %q: %v", series, rest, err)
		}
		return v, true
	}
	return 0, false
}

func TestMetricsLimits(t *testing.T) {
	v1End := float64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(1<<41)*time.Millisecond).UnixMilli()) / 1000
	for _, c := range []struct {
		name   string
		policy snowfence.ClockPolicy
		maxErr time.Duration
		warn   time.Duration
		// wantLimit is the exported policy bound; absent if negative.
		wantLimit, wantWarn float64
	}{
		{"require", snowfence.ClockRequire, 20 * time.Millisecond, 0, 0.02, 5 * 365 * 24 * 3600},
		{"warn, defaults", snowfence.ClockWarn, 0, 72 * time.Hour, 0.005, 72 * 3600},
		{"off", snowfence.ClockOff, 20 * time.Millisecond, 0, -1, 5 * 365 * 24 * 3600},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, func(g *snowfence.Config) {
				g.ClockPolicy, g.MaxClockError, g.ExhaustionWarning = c.policy, c.maxErr, c.warn
				g.ClockStatus = func() (snowfence.ClockStatus, error) {
					return snowfence.ClockStatus{Synchronized: true, MaxError: 3 * time.Millisecond}, nil
				}
			}, nil)
			body := f.do(req{target: "/metrics"}).body
			got, ok := sample(t, body, "snowfence_clock_max_error_limit_seconds")
			switch {
			case c.wantLimit < 0 && ok:
				t.Errorf("snowfence_clock_max_error_limit_seconds = %v with clock policy %s, want it absent", got, c.policy)
			case c.wantLimit >= 0 && (!ok || got != c.wantLimit):
				t.Errorf("snowfence_clock_max_error_limit_seconds = %v (present %v), want %v", got, ok, c.wantLimit)
			}
			if got, ok := sample(t, body, "snowfence_layout_timestamps_end_seconds"); !ok || got != v1End {
				t.Errorf("snowfence_layout_timestamps_end_seconds = %v (present %v), want %v (v1's epoch + 2^41 ms)", got, ok, v1End)
			}
			if got, ok := sample(t, body, "snowfence_layout_exhaustion_warning_seconds"); !ok || got != c.wantWarn {
				t.Errorf("snowfence_layout_exhaustion_warning_seconds = %v (present %v), want %v", got, ok, c.wantWarn)
			}
		})
	}
}

func TestMetricsRegionNumbers(t *testing.T) {
	var left, total atomic.Int64
	left.Store(3)
	total.Store(8)
	var calls atomic.Int64
	f := newFixture(t, nil, func(c *Config) {
		c.RegionNumbers = func() (int, int) { calls.Add(1); return int(left.Load()), int(total.Load()) }
	})
	for _, c := range []struct {
		name              string
		left, total       int64
		wantLeft, wantAll float64
		present           bool
	}{
		{"some left", 3, 8, 3, 8, true},
		{"one left, read at scrape time", 1, 8, 1, 8, true},
		{"none left", 0, 8, 0, 8, true},
		{"no region bits", 0, 0, 0, 0, false},
	} {
		left.Store(c.left)
		total.Store(c.total)
		body := f.do(req{target: "/metrics"}).body
		gotLeft, okLeft := sample(t, body, "snowfence_region_numbers_left")
		gotAll, okAll := sample(t, body, "snowfence_region_numbers")
		if okLeft != c.present || okAll != c.present || gotLeft != c.wantLeft || gotAll != c.wantAll {
			t.Errorf("%s: region_numbers_left %v (present %v), region_numbers %v (present %v); want %v and %v, present %v",
				c.name, gotLeft, okLeft, gotAll, okAll, c.wantLeft, c.wantAll, c.present)
		}
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("RegionNumbers called %d times for 4 scrapes, want once a scrape", n)
	}
	// Without the seam neither series is exported.
	body := newFixture(t, nil, nil).do(req{target: "/metrics"}).body
	for _, absent := range []string{"snowfence_region_numbers_left", "snowfence_region_numbers"} {
		if _, ok := sample(t, body, absent); ok {
			t.Errorf("%s exported with no Config.RegionNumbers", absent)
		}
	}
}
