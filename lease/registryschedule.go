package lease

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The fleet's layout schedule is kept twice: as every store's fleet
// schedule record (FleetSchedule, beside the leases; every claim and
// renewal compares the holder's schedule with it) and in the region
// registry (Registry.Schedule), whose copies a change writes to every
// region with a version compare. The registry is what keeps the regions'
// records one: two regions on two schedules could put two layouts in
// force at the same instant, and two layouts can give the same bits to
// IDs of different machines. A holder starts only when its schedule, its
// own store's record and its own store's copy of the registry all agree
// (CheckHolderSchedule); ChangeFleetSchedule changes the records first and
// the registry last, so that while a change is half done no holder can
// start anywhere on the new schedule, and none can start on the old one in
// a region whose store already has the new.

// WithSchedule returns r, one version on, with the fleet schedule text
// (canonicalised, CanonicalSchedule) recorded. ErrInvalid if text is not a
// schedule. A text equal to the recorded one is still a change (one
// version on): compare first when nothing should be written then.
func (r Registry) WithSchedule(text string) (Registry, error) {
	canon, err := CanonicalSchedule(text)
	if err != nil {
		return r, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return Registry{Version: r.Version + 1, Regions: slices.Clone(r.Regions), Copies: r.Copies, CopyIdentities: r.CopyIdentities, Schedule: canon}, nil
}

// CheckHolderSchedule returns ErrSchedule, saying which command fixes it,
// unless a holder may start on the schedule holder (its text, "" for the
// default) in a region whose store keeps the fleet schedule record fleet
// and the registry reg: with reg.Schedule recorded, the record must equal
// it (else a change reached one and not the other) and so must holder.
// With no schedule recorded in reg it returns nil: the store compares the
// holder with its record at every claim.
func CheckHolderSchedule(reg Registry, holder string, fleet FleetSchedule) error {
	if reg.Schedule == "" {
		return nil
	}
	if fleet.Text != reg.Schedule {
		return fmt.Errorf("%w: this region's store keeps the fleet schedule %q (version %d) but its copy of the region registry (version %d) records %q: "+
			"a schedule change reached one and not the other; finish it with snowfence schedule set '%s' naming every region's store (the store flags and --copy, as for snowfence regions), "+
			"or, if the registry's copies differ, snowfence regions sync",
			ErrSchedule, fleet.Text, fleet.Version, reg.Version, reg.Schedule, reg.Schedule)
	}
	canon, err := CanonicalSchedule(holder)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if canon != reg.Schedule {
		return fmt.Errorf("%w: this holder's schedule is %q but the fleet's, recorded in the region registry (version %d), is %q: "+
			"restart it with --schedule '%s', or change the fleet's schedule with snowfence schedule set SCHEDULE naming every region's store (the store flags and --copy …)",
			ErrSchedule, canon, reg.Version, reg.Schedule, reg.Schedule)
	}
	return nil
}

// A FleetCopy is one region's lease store, named as its copy of the
// registry is (RegistryCopy).
type FleetCopy struct {
	Name  string
	Store Store
}

// A ScheduleChange is what ChangeFleetSchedule did.
type ScheduleChange struct {
	// Schedule is the schedule set, in canonical text.
	Schedule string
	// Names are the copies' names, in the order they were written.
	Names []string
	// Was and Now are each copy's fleet schedule record before and after,
	// in that order.
	Was, Now []FleetSchedule
	// Registry is the registry after the change: the zero Registry if no
	// registry is written (then only the records changed).
	Registry Registry
}

// errScheduleRecorded stops UpdateRegistry when the registry records the
// schedule already.
var errScheduleRecorded = errors.New("lease: the registry records the schedule already")

// ChangeFleetSchedule sets the fleet schedule of every region to text, on
// the operator's clock now with the notice rule of SetSchedule, in this
// order:
//
//  1. It reads every copy of the registry and refuses if they differ
//     (ErrRegistryDiverged: run SyncRegistry) or are not the copies the
//     registry records (ErrInvalid), or two are one store or one is not
//     the store recorded under its name (ErrCopyIdentity), and checks the change on every
//     store's record (SetSchedule's refusals, with the marks of every
//     keyspace a registered region's holders lease in under the old or
//     the new schedule, region 0's always), before writing anything.
//  2. It sets every store's record (SetSchedule), in the copies' name
//     order. A store at text already is left as it is.
//  3. If a registry is written, it records text in it (UpdateRegistry:
//     every copy, with the version compare), unless it records text
//     already.
//
// The registry is written last, once every store has the new record.
// Holders start only where the holder's schedule, the store's record and
// the registry agree (CheckHolderSchedule), so a change that stops half
// way leaves one schedule that holders can start on: in step 2, the old
// one, only in the regions whose store is not changed yet (elsewhere the
// running holders on it stop, as SetSchedule says, before the first
// instant the two differ); in step 3, the new one, only in the regions
// whose copy of the registry has it (every store has it, so holders on the
// old schedule everywhere stop before that instant). Running
// ChangeFleetSchedule again with the same text finishes it (SyncRegistry
// too, when it stopped in step 3), as long as the notice rule still admits
// the change on the stores not yet changed: finish it promptly.
//
// Not protected: two operators changing the schedule at the same moment
// can leave the records differing; holders are then refused until one
// change is run again.
func ChangeFleetSchedule(ctx context.Context, copies []FleetCopy, text string, now time.Time, notice time.Duration) (ScheduleChange, error) {
	canon, err := CanonicalSchedule(text)
	if err != nil {
		return ScheduleChange{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	rcs := make([]RegistryCopy, len(copies))
	for i, c := range copies {
		rcs[i] = RegistryCopy{Name: c.Name, Store: c.Store}
	}
	rcs, names, err := sortedCopies(rcs)
	if err != nil {
		return ScheduleChange{}, err
	}
	stores := make([]Store, len(rcs))
	for i, c := range rcs {
		stores[i] = c.Store.(Store) // built from a FleetCopy above
	}
	ch := ScheduleChange{Schedule: canon, Names: names, Was: make([]FleetSchedule, len(stores))}
	ids, err := readIdentities(ctx, rcs)
	if err != nil {
		return ch, err
	}
	reg, err := readCopies(ctx, rcs, names, ids)
	if err != nil {
		return ch, err
	}
	if reg.Version > 0 {
		if err := sameCopies(reg, names); err != nil {
			return ch, err
		}
		if err := checkIdentities(reg, names, ids); err != nil {
			return ch, err
		}
	}
	for i, st := range stores {
		if ch.Was[i], _, err = checkScheduleChange(ctx, st, canon, now, notice); err != nil {
			return ch, fmt.Errorf("copy %s: %w; nothing was changed", names[i], err)
		}
	}
	for i, st := range stores {
		set, err := SetSchedule(ctx, st, canon, now, notice)
		if err != nil {
			done := "no store was changed"
			if i > 0 {
				done = "the stores of " + strings.Join(names[:i], ", ") + " are at it (their holders are refused at start until the change is finished)"
			}
			return ch, fmt.Errorf("set the fleet schedule of copy %s to %q: %w; %s and the region registry was not changed: "+
				"run the same snowfence schedule set again, with every copy, soon (the stores already at it are left as they are)", names[i], canon, err, done)
		}
		ch.Now = append(ch.Now, set)
	}
	if reg.Version == 0 {
		return ch, nil
	}
	ch.Registry, err = UpdateRegistry(ctx, rcs, func(r Registry) (Registry, error) {
		if r.Schedule == canon {
			return r, errScheduleRecorded
		}
		return r.WithSchedule(canon)
	})
	switch {
	case errors.Is(err, errScheduleRecorded):
		return ch, nil
	case errors.Is(err, ErrRegistryDiverged):
		return ch, fmt.Errorf("every store keeps the fleet schedule %q, but not every copy of the region registry records it yet (%w): run snowfence regions sync with every copy; "+
			"holders are refused at start where the two differ until then", canon, err)
	case err != nil:
		return ch, fmt.Errorf("every store keeps the fleet schedule %q, but the region registry was not changed (%w): run the same snowfence schedule set again; "+
			"holders are refused at start until then", canon, err)
	}
	return ch, nil
}
