package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease/registry"
)

// DefaultFleetSchedule is the fleet schedule of a store in which none was
// ever set: v1 from the epoch on, the default of every holder.
const DefaultFleetSchedule = "v1"

// DefaultScheduleNotice is how far ahead of the operator's clock a change
// to the fleet schedule must begin (see SetSchedule), and MinScheduleNotice
// the shortest notice SetSchedule accepts. A holder reserves at most
// MaxReserve ahead of its clock (the keeper refuses longer), so every mark
// reserved before the change ends before the first instant at which the old
// and the new schedule differ; holders still on the old schedule go on
// renewing until their next mark would reach that instant (CheckExtension),
// which gives the fleet the notice to restart on the new schedule without
// a flag day.
const (
	DefaultScheduleNotice = time.Hour
	MinScheduleNotice     = time.Hour
	MaxReserve            = 30 * time.Minute
)

// A FleetSchedule is the layout schedule stored beside the leases: the one
// every holder of the store must use.
type FleetSchedule struct {
	// Text is the schedule's textual form (snowfence.ParseSchedule).
	Text string `json:"schedule"`
	// Version is 0 when the schedule was never set, and goes up by one on
	// every SetFleetSchedule.
	Version int64 `json:"version"`
}

// CanonicalSchedule returns the textual form stores compare: the schedule
// parsed and formatted again, "v1" for the empty string
// (registry.CanonicalSchedule, which the region registry compares too).
func CanonicalSchedule(text string) (string, error) { return registry.CanonicalSchedule(text) }

// CheckSchedule returns ErrSchedule, saying what to do, unless the holder's
// schedule (canonical text, "" for the default) equals the fleet's. Every
// store calls it in Claim and Extend.
func CheckSchedule(holder string, fleet FleetSchedule) error {
	if holder == "" {
		holder = DefaultFleetSchedule
	}
	if holder == fleet.Text {
		return nil
	}
	how := "give this holder --schedule " + fleet.Text
	if fleet.Version == 0 {
		how = "set the fleet schedule first (snowfence schedule set '" + holder + "'), or give this holder the default schedule"
	}
	return fmt.Errorf("%w: this holder's schedule is %q, the fleet's (version %d) is %q: %s", ErrSchedule, holder, fleet.Version, fleet.Text, how)
}

// CheckExtension returns nil if a lease claimed under the holder's schedule
// (canonical text, "" for the default) may reserve timestamps below markMs
// while the fleet schedule is fleet: the two put the same layout in force at
// every instant before markMs. Otherwise ErrSchedule, saying what to do.
// Every store calls it in Extend, so a holder on the old schedule keeps
// issuing until the first instant the fleet's new schedule differs from
// its own, and stops before it.
func CheckExtension(holder string, fleet FleetSchedule, markMs int64) error {
	if holder == "" {
		holder = DefaultFleetSchedule
	}
	if holder == fleet.Text {
		return nil
	}
	err := CheckSchedule(holder, fleet)
	mine, perr := snowfence.ParseSchedule(holder)
	theirs, ferr := snowfence.ParseSchedule(fleet.Text)
	if perr != nil || ferr != nil {
		return err
	}
	at, differ := firstDifference(mine, theirs, time.UnixMilli(markMs))
	if !differ {
		return nil
	}
	return fmt.Errorf("%w; the two differ from %s on, before the mark %s this renewal would reserve",
		err, at.UTC().Format(time.RFC3339), FormatMs(markMs))
}

// An UnusedScheduleSetter is a store that can set its fleet schedule in one
// atomic write that also checks that the store holds no lease record at
// all: no number held, released, marked or quarantined, and no claim ever
// journaled, in any keyspace it serves (every region of its prefix or
// table, every layout step's). etcdstore and pgstore implement it; a store
// that cannot make that check in the write (DynamoDB conditions a write on
// one item only) does not, and keeps the notice rule.
type UnusedScheduleSetter interface {
	// SetFleetScheduleUnused is Admin.SetFleetSchedule made only while
	// the store holds no lease record, checked in the same atomic write:
	// ErrInUse, saying how many it found, otherwise.
	SetFleetScheduleUnused(ctx context.Context, prev int64, text string) (FleetSchedule, error)
}

// SetSchedule changes the fleet schedule stored in st to text, on the
// operator's clock now. It refuses — with ErrInvalid and the first instant
// at which they differ — a schedule that differs from the stored one at any
// instant before T + notice (zero: DefaultScheduleNotice), where T is the
// later of now and the highest mark in any keyspace of st that either
// schedule's holders lease in (every region of their layouts, every step;
// highestMark): a cutover
// already past or near must not move, or holders still on the old schedule
// would issue, before they learn of the change or below marks they already
// reserved, IDs that the new one gives other bits. A notice shorter than MinScheduleNotice is refused with
// ErrInvalid. The write is a compare-and-set on the version read.
//
// The notice protects holders and marks that exist. On a store that holds
// none — no lease record in any keyspace: nothing was ever claimed,
// quarantined or raised there, so no holder can have issued an ID under
// the old schedule — the change applies at once, whatever instant it
// moves, provided the store can check that in the write itself
// (UnusedScheduleSetter; ErrInUse if a record appeared since the read).
// The check is in the write, not only the read before it, because a
// holder claiming and renewing between the two would issue under the old
// schedule while holders of the new one start at once.
func SetSchedule(ctx context.Context, st Admin, text string, now time.Time, notice time.Duration) (FleetSchedule, error) {
	cur, next, unused, err := checkScheduleChange(ctx, st, text, now, notice)
	switch {
	case err != nil || cur.Text == next:
		return cur, err
	case unused:
		return st.(UnusedScheduleSetter).SetFleetScheduleUnused(ctx, cur.Version, next)
	}
	return st.SetFleetSchedule(ctx, cur.Version, next)
}

// checkScheduleChange is SetSchedule's check without the write: it returns
// the fleet schedule stored in st and text in canonical form, or the
// error SetSchedule refuses the change with. unused is true when the
// notice rule would refuse the change but st holds no lease record in the
// keyspaces read and can check that again in its write
// (UnusedScheduleSetter): SetSchedule then writes with that check.
func checkScheduleChange(ctx context.Context, st Admin, text string, now time.Time, notice time.Duration) (cur FleetSchedule, canon string, unused bool, err error) {
	cur, canon, use, err := checkScheduleNotice(ctx, st, text, now, notice)
	if err == nil || use == nil {
		return cur, canon, false, err
	}
	if use.records > 0 {
		return FleetSchedule{}, "", false, fmt.Errorf("%w (the notice protects what exists: %s)", err, use)
	}
	if _, ok := st.(UnusedScheduleSetter); !ok {
		return FleetSchedule{}, "", false, fmt.Errorf("%w (the store holds no lease record, but cannot check that in the same write as the change, "+
			"so a holder claiming meanwhile could be missed: give the notice)", err)
	}
	return cur, canon, true, nil
}

// storeUse counts the lease records the notice rule read (highestMark).
type storeUse struct {
	records, held, marked, quarantined int
	keyspaces                          int
}

func (u *storeUse) String() string {
	return fmt.Sprintf("%d lease %s in the %d keyspaces either schedule's holders lease in — %d %s, %d %s, %d quarantined; "+
		"on a store that holds none the change applies at once", u.records, pluralWord(u.records, "record", "records"), u.keyspaces,
		u.held, pluralWord(u.held, "holder", "holders"), u.marked, pluralWord(u.marked, "mark", "marks"), u.quarantined)
}

// pluralWord is one or many by n.
func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// checkScheduleNotice is the notice rule: checkScheduleChange without the
// unused store's exception. When the rule refuses, use counts the lease
// records it read, and cur and the canonical text are returned with the
// error.
func checkScheduleNotice(ctx context.Context, st Admin, text string, now time.Time, notice time.Duration) (FleetSchedule, string, *storeUse, error) {
	if notice == 0 {
		notice = DefaultScheduleNotice
	}
	if notice < MinScheduleNotice {
		return FleetSchedule{}, "", nil, fmt.Errorf("%w: a notice of %s is shorter than %s: holders reserve up to %s ahead of their clocks "+
			"and must learn of the change before it takes effect; give at least %s", ErrInvalid, notice, MinScheduleNotice, MaxReserve, MinScheduleNotice)
	}
	next, err := snowfence.ParseSchedule(text)
	if err != nil {
		return FleetSchedule{}, "", nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	cur, err := st.FleetSchedule(ctx)
	if err != nil {
		return FleetSchedule{}, "", nil, err
	}
	if cur.Text == next.String() {
		return cur, cur.Text, nil, nil
	}
	old, err := snowfence.ParseSchedule(cur.Text)
	if err != nil {
		return FleetSchedule{}, "", nil, fmt.Errorf("lease: the stored fleet schedule %q does not parse: %w", cur.Text, err)
	}
	// The notice counts from the later of the operator's clock and the
	// highest mark stored: a holder may already have reserved, under the
	// old schedule, timestamps up to its mark, and an operator's clock can
	// be behind the fleet's (or a holder's ahead of it).
	from, by, use, err := highestMark(ctx, st, old, next, now)
	if err != nil {
		return FleetSchedule{}, "", nil, fmt.Errorf("lease: read the marks before changing the fleet schedule: %w", err)
	}
	if at, differ := firstDifference(old, next, from.Add(notice)); differ {
		return cur, next.String(), &use, fmt.Errorf("%w: the new schedule %q differs from the fleet's %q from %s on, which is before %s + %s (%s, from %s): "+
			"only instants at least %s past every clock and mark may change; pick a later cutover",
			ErrInvalid, next.String(), cur.Text, at.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339), notice,
			from.Add(notice).UTC().Format(time.RFC3339), by, notice)
	}
	return cur, next.String(), nil, nil
}

// highestMark returns the later of now and the highest mark or lease expiry
// in every keyspace that holders of old or next lease in — each region their
// layouts have room for, in each step's keyspace (KeyspaceOf) — and what it
// came from, with a count of the records read. The fleet schedule is one for
// all of them, and a holder's marks live in its region's keyspace of the
// step in force, not in st's own.
func highestMark(ctx context.Context, st Admin, old, next snowfence.Schedule, now time.Time) (time.Time, string, storeUse, error) {
	var use storeUse
	regions, steps := 1, max(len(old.Steps()), len(next.Steps()))
	for _, s := range []snowfence.Schedule{old, next} {
		for _, step := range s.Steps() {
			regions = max(regions, 1<<min(step.Layout.RegionBits, 16))
		}
	}
	from, by := now, "the operator's clock"
	for s := range steps {
		for r := range regions {
			idx := r
			if steps > 1 {
				var err error
				if idx, err = KeyspaceOf(s, r); err != nil {
					return from, by, use, err
				}
			}
			ks, err := st.AdminKeyspace(idx)
			if err != nil {
				return from, by, use, err
			}
			recs, err := ks.List(ctx)
			ks.Close()
			if err != nil {
				return from, by, use, err
			}
			use.keyspaces++
			for _, rec := range recs {
				use.count(rec)
				if m := max(rec.MarkMs, rec.ExpiresMs); !rec.Quarantined && time.UnixMilli(m).After(from) {
					from, by = time.UnixMilli(m), fmt.Sprintf("machine %d's mark or lease expiry in keyspace %d", rec.Machine, idx)
				}
			}
		}
	}
	return from, by, use, nil
}

// count adds rec to the counts.
func (u *storeUse) count(rec Record) {
	u.records++
	switch {
	case rec.Quarantined:
		u.quarantined++
	case rec.Held():
		u.held++
	case rec.MarkMs > 0 || rec.ExpiresMs > 0:
		u.marked++
	}
}

// firstDifference reports the first instant before until at which a and b
// put different layouts in force, if there is one. Layouts change only at
// cutovers, so comparing at the epoch and at every cutover of either is
// enough.
func firstDifference(a, b snowfence.Schedule, until time.Time) (time.Time, bool) {
	var instants []time.Time
	for _, s := range []snowfence.Schedule{a, b} {
		for i, st := range s.Steps() {
			if i == 0 {
				instants = append(instants, st.Layout.Epoch)
				continue
			}
			instants = append(instants, st.From)
		}
	}
	var first time.Time
	found := false
	for _, t := range instants {
		if !t.Before(until) {
			continue
		}
		if a.LayoutAt(t).String() != b.LayoutAt(t).String() && (!found || t.Before(first)) {
			first, found = t, true
		}
	}
	return first, found
}
