package snowfence_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

func TestCheckPlacement(t *testing.T) {
	v1 := snowfence.DefaultSchedule()
	v2 := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V2()})
	mig, _ := snowfence.ParseSchedule("v1,v2@2028-01-01T00:00:00Z")
	cut := mustTime(t, "2028-01-01T00:00:00Z")
	before, after := cut.Add(-time.Hour), cut.Add(time.Hour)
	for _, tc := range []struct {
		name           string
		s              snowfence.Schedule
		lo, hi, region int
		from           time.Time
		want           string // "" for no error, else a piece of the message
	}{
		{"v1 whole range", v1, 0, 1023, 0, before, ""},
		{"v1 past its machine bits", v1, 0, 1024, 0, before, "hold machines 0-1023"},
		{"v1 region 1", v1, 5, 5, 1, before, "no region bits"},
		{"v1 region 1, every layout", v1, 5, 5, 1, time.Time{}, "no region bits"},
		{"v2 region 7", v2, 0, 511, 7, before, ""},
		{"v2 region 8", v2, 0, 511, 8, before, "regions 0-7"},
		{"v2 machine 512", v2, 0, 512, 0, before, "hold machines 0-511"},
		{"negative region", v2, 0, 1, -1, before, "never negative"},
		{"empty range", v1, 5, 4, 0, before, "0 ≤ lo ≤ hi"},
		{"negative machine", v1, -1, 4, 0, before, "0 ≤ lo ≤ hi"},
		// The cases: a migration schedule with the default range,
		// or a region v2 cannot hold.
		{"v1,v2 with 0-1023 before the cutover", mig, 0, 1023, 0, before, "layout v2, in force from 2028-01-01"},
		{"v1,v2 with 0-1023 after the cutover", mig, 0, 1023, 0, after, "hold machines 0-511"},
		{"v1,v2 with 0-511 before the cutover", mig, 0, 511, 0, before, ""},
		{"v1,v2 region 1 before the cutover", mig, 0, 511, 1, before, "use region 0 until the cutover"},
		{"v1,v2 region 1 at the cutover", mig, 0, 511, 1, cut, ""},
		{"v1,v2 region 1 after the cutover", mig, 0, 511, 1, after, ""},
		{"v1,v2 region 8 after the cutover", mig, 0, 511, 8, after, "regions 0-7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.CheckPlacement(snowfence.Placement{Lo: tc.lo, Hi: tc.hi, Region: tc.region, From: tc.from})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckPlacement(%d, %d, %d, %s) under %s = %v, want nil", tc.lo, tc.hi, tc.region, tc.from, tc.s, err)
				}
				return
			}
			var pe *snowfence.PlacementError
			if !errors.Is(err, snowfence.ErrPlacement) || !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckPlacement(%d, %d, %d, %s) under %s = %v, want a *PlacementError saying %q", tc.lo, tc.hi, tc.region, tc.from, tc.s, err, tc.want)
			}
			if pe.Lo != tc.lo || pe.Hi != tc.hi || pe.Region != tc.region {
				t.Errorf("PlacementError %+v does not name the placement checked", pe)
			}
		})
	}
}

// Path 1 of issue 10: the stores lease machine numbers per region, so the
// holders of regions 1 and 2 can both hold machine 5. Under v1, which has
// no region bits, they used to mint the same IDs (the generator wrote
// region 0 for both). New refuses such a Static number at once, and a
// LeaseView that does not tell its placement is refused on its grant.
func TestRegionUnderRegionlessLayout(t *testing.T) {
	for _, region := range []int{1, 2} {
		_, err := snowfence.New(snowfence.Config{Lease: snowfence.Static(5, region), Clock: fakeclock.New(start), ClockPolicy: snowfence.ClockOff})
		if !errors.Is(err, snowfence.ErrPlacement) || !errors.Is(err, snowfence.ErrInvalidConfig) {
			t.Errorf("New with Static(5, %d) under v1: %v, want ErrPlacement", region, err)
		}
	}
	clk := fakeclock.New(start)
	var ids [2]snowfence.ID
	var errs [2]error
	for i, region := range []int{1, 2} {
		g, err := snowfence.New(snowfence.Config{
			Lease: &lease{g: &snowfence.Grant{Machine: 5, Region: region, Token: 1, LimitMs: math.MaxInt64}},
			Clock: clk, ClockPolicy: snowfence.ClockOff,
		})
		if err != nil {
			t.Fatal(err)
		}
		ids[i], errs[i] = g.Next(context.Background())
	}
	for i, err := range errs {
		if !errors.Is(err, snowfence.ErrNoLayout) {
			t.Errorf("region %d, machine 5 under v1: ID %d, err %v; want ErrNoLayout (the two regions minted %d and %d)", i+1, ids[i], err, ids[0], ids[1])
		}
	}
}

// A Keeper-like LeaseView with a schedule of its own: New takes it when
// Config.Schedule is zero and refuses a different one.
type scheduledLease struct {
	lease
	s snowfence.Schedule
}

func (l *scheduledLease) Schedule() snowfence.Schedule { return l.s }

func TestScheduleFromLease(t *testing.T) {
	mig, _ := snowfence.ParseSchedule("v1,v2@2028-01-01T00:00:00Z")
	l := &scheduledLease{lease: lease{g: &snowfence.Grant{Machine: 170, Token: 1, LimitMs: math.MaxInt64}}, s: mig}
	clk := fakeclock.New(mustTime(t, "2028-01-01T00:00:00Z"))
	g, err := snowfence.New(snowfence.Config{Lease: l, Clock: clk, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := mig.Decode(next(t, g)); d.Layout != "v2" {
		t.Errorf("with the lease's schedule v1,v2 after the cutover: layout %s, want v2", d.Layout)
	}
	if _, err := snowfence.New(snowfence.Config{Lease: l, Schedule: snowfence.DefaultSchedule(), Clock: clk, ClockPolicy: snowfence.ClockOff}); !errors.Is(err, snowfence.ErrInvalidConfig) {
		t.Errorf("Config.Schedule v1 with a lease on v1,v2: %v, want ErrInvalidConfig", err)
	}
	if _, err := snowfence.New(snowfence.Config{Lease: l, Schedule: mig, Clock: clk, ClockPolicy: snowfence.ClockOff}); err != nil {
		t.Errorf("the same schedule on both: %v", err)
	}
}
