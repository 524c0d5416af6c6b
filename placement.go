package snowfence

import (
	"fmt"
	"time"
)

// A Placement is the inclusive range of machine numbers and the region that
// a lease's grants carry for the IDs of instants in [From, Until). A zero
// From means from the epoch on, a zero Until no end. A LeaseView tells its
// placements before its first grant (Static its number; lease.Keeper, per
// layout step it holds a number for, its machine range and region), and New
// checks each against every layout of the schedule in force during it from
// the clock's reading on (Schedule.CheckPlacement), so a holder whose
// numbers a layout cannot hold is refused at start rather than at a
// cutover.
type Placement struct {
	Lo, Hi, Region int
	From, Until    time.Time
}

// PlacementError reports a machine range or region that does not fit a
// layout of a schedule. It matches ErrPlacement.
type PlacementError struct {
	// Layout is the layout that cannot hold the placement, and From the
	// first instant it is in force (zero: from the epoch on).
	Layout Layout
	From   time.Time
	// Lo, Hi and Region are the placement checked.
	Lo, Hi, Region int
	// Detail says what does not fit and what to do.
	Detail string
}

func (e *PlacementError) Error() string {
	from := "the epoch"
	if !e.From.IsZero() {
		from = e.From.UTC().Format(timeFormat)
	}
	return fmt.Sprintf("snowfence: machines %d-%d in region %d cannot use layout %s, in force from %s: %s",
		e.Lo, e.Hi, e.Region, e.Layout.Name, from, e.Detail)
}

// Unwrap returns ErrPlacement.
func (e *PlacementError) Unwrap() error { return ErrPlacement }

// CheckPlacement reports whether a holder that leases machine numbers
// p.Lo..p.Hi (inclusive) in p.Region may mint under every layout of the
// schedule in force at some instant in [p.From, p.Until) (zero From: from the
// epoch on; zero Until: no end). For each such layout:
//
//   - hi must fit its machine bits (and lo must not be negative);
//   - region must fit its region bits;
//   - in particular, a region other than 0 needs region bits. Every lease
//     store leases machine numbers per region (each region has numbers
//     0..n of its own), so under a layout without region bits the holders of
//     regions 1 and 2 could both hold machine 5 and write the same bits.
//
// A range validated this way makes every number a keeper can claim in it fit
// every layout that will be in force while the number is held. The error is
// a *PlacementError that says what to change.
func (s Schedule) CheckPlacement(p Placement) error {
	if !s.valid() {
		return fmt.Errorf("%w: empty schedule; use DefaultSchedule or NewSchedule", ErrInvalidLayout)
	}
	lo, hi, region := p.Lo, p.Hi, p.Region
	first := 0
	if !p.From.IsZero() {
		first = s.stepIndexAt(p.From)
	}
	for i := first; i < len(s.steps); i++ {
		st := s.steps[i]
		if i > first && !p.Until.IsZero() && !st.From.Before(p.Until) {
			break // in force only from Until on
		}
		l := st.Layout
		bad := func(format string, args ...any) error {
			return &PlacementError{Layout: l, From: st.From, Lo: lo, Hi: hi, Region: region, Detail: fmt.Sprintf(format, args...)}
		}
		switch {
		case lo < 0 || hi < lo:
			return bad("the machine range must satisfy 0 ≤ lo ≤ hi")
		case hi >= 1<<l.MachineBits:
			return bad("its %d machine bits hold machines 0-%d only; lease from a range within 0-%d (--machines)",
				l.MachineBits, 1<<l.MachineBits-1, 1<<l.MachineBits-1)
		case region < 0:
			return bad("a region is never negative")
		case region != 0 && l.RegionBits == 0:
			if !regionBitsRequired() {
				continue // the old behaviour: the region is dropped from the ID
			}
			return bad("it has no region bits, and the lease stores lease machine numbers per region, so holders of two regions " +
				"would hold the same numbers and mint the same IDs; use region 0 until the cutover to a layout with region bits " +
				"(a schedule such as v1,v2@<instant>), and start holders of other regions only after it")
		case region >= 1<<l.RegionBits:
			return bad("its %d region bits hold regions 0-%d; pick a region within them", l.RegionBits, 1<<l.RegionBits-1)
		}
	}
	return nil
}

// stepIndexAt returns the index of the step in force at instant t (the first
// before the epoch).
func (s Schedule) stepIndexAt(t time.Time) int {
	first := s.steps[0].Layout
	d := t.UnixMilli() - first.Epoch.UnixMilli()
	if d < 0 {
		return 0
	}
	return s.stepAt(d / first.unit().Milliseconds())
}
