package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease/registry"
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
// (CheckHolderSchedule); ChangeFleetSchedule changes the registry first
// and then the records, each only while its own store's copy of the
// registry records the change, so that while a change is half done a
// holder starts only where its store has caught up, and two operators'
// changes are ordered by the registry's version compare.

// CheckHolderSchedule returns ErrSchedule, saying which command fixes it,
// unless a holder may start on the schedule holder (its text, "" for the
// default) in a region whose store keeps the fleet schedule record fleet
// and the registry reg: the record must equal reg.Schedule
// (CheckRecordedSchedule) and so must holder. A registry that
// records no schedule (written before it kept one, or through registry.AddRegion)
// is refused until ChangeFleetSchedule records one; with no registry at
// all it returns nil: the store compares the holder with its record at
// every claim.
func CheckHolderSchedule(reg registry.Registry, holder string, fleet FleetSchedule) error {
	switch {
	case reg.Version == 0:
		return nil // no registry: one region, whose store compares at every claim
	case reg.Schedule == "":
		return fmt.Errorf("%w: the region registry (version %d) records no fleet schedule, so nothing keeps the regions' schedules one: "+
			"record it with snowfence schedule set '%s' naming every region's store (the store flags and --copy …)",
			ErrSchedule, reg.Version, fleet.Text)
	}
	if err := CheckRecordedSchedule(reg, fleet); err != nil {
		return err
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

// CheckRecordedSchedule returns ErrSchedule, naming the command that
// reconciles them, when reg records a fleet schedule (Registry.Schedule)
// and a store's fleet schedule record fleet differs from it: two regions on
// two schedules can put two layouts in force at one instant, and two
// layouts can give the same bits to IDs of different machines. A registry
// that records none (or none at all) refuses nothing here. It is the one
// compare of the two: holders at start (CheckHolderSchedule), every
// store's claim (on the registry and the record as its claim reads them),
// and a store joining the registry or becoming a region's home
// (CheckStoreSchedule) make it.
func CheckRecordedSchedule(reg registry.Registry, fleet FleetSchedule) error {
	if reg.Schedule == "" || fleet.Text == reg.Schedule {
		return nil
	}
	return fmt.Errorf("%w: the lease store keeps the fleet schedule %q (version %d) but the region registry (version %d) records %q, every region's: "+
		"two regions on two schedules can issue the same IDs. Make the store's record the registry's with snowfence schedule set '%s' naming every region's store "+
		"(the store flags and --copy, as for snowfence regions; a store that holds no copy of the registry yet alone, with its own store flags); "+
		"if the registry's copies differ, run snowfence regions sync first",
		ErrSchedule, fleet.Text, fleet.Version, reg.Version, reg.Schedule, reg.Schedule)
}

// CheckStoreSchedule reads the fleet schedule record of st, the store of
// the registry's copy called name, and refuses with CheckRecordedSchedule's
// ErrSchedule one that differs from the schedule reg records: how a store
// joining the registry (JoinRegistry) or given a region's home (snowfence
// regions add --home) is checked before the registry records it.
func CheckStoreSchedule(ctx context.Context, st RegistryReader, name string, reg registry.Registry) error {
	if reg.Schedule == "" {
		return nil
	}
	fleet, err := st.FleetSchedule(ctx)
	if err != nil {
		return fmt.Errorf("read the fleet schedule record of copy %s's store: %w", name, err)
	}
	if err := CheckRecordedSchedule(reg, fleet); err != nil {
		return fmt.Errorf("copy %s: %w", name, err)
	}
	return nil
}

// JoinRegistry adds the copy joining to the registry kept in copies, as
// registry.Join does, refusing with ErrSchedule (CheckStoreSchedule) a
// joining store whose fleet schedule record is not the schedule the
// registry records: a store holding a copy refuses every claim while its
// record differs from the copy's schedule, and a region homed there could
// never start a holder. It refuses too, with ErrInUse, a joining store that
// holds lease records of a region number the registry has already given
// (checkNumberUnusedElsewhere): holders that ran there as that number
// outside the registry — before the store held one, every holder ran as
// region 0, unchecked — would go on minting the IDs of that region's
// holders on its home.
func JoinRegistry(ctx context.Context, copies []FleetCopy, joining FleetCopy) (registry.Registry, error) {
	check := func(ctx context.Context, reg registry.Registry) error {
		if err := CheckStoreSchedule(ctx, joining.Store, joining.Name, reg); err != nil {
			return err
		}
		for _, g := range reg.Regions {
			if err := checkNumberUnusedElsewhere(ctx, []FleetCopy{joining}, g.Home, g.Number, reg.Schedule); err != nil {
				return err
			}
		}
		return nil
	}
	return registry.Join(ctx, registryCopies(copies), registry.Copy{Name: joining.Name, Store: joining.Store}, check)
}

// registryCopies returns the registry's copies that copies are.
func registryCopies(copies []FleetCopy) []registry.Copy {
	rcs := make([]registry.Copy, len(copies))
	for i, c := range copies {
		rcs[i] = registry.Copy{Name: c.Name, Store: c.Store}
	}
	return rcs
}

// A FleetCopy is one region's lease store, named as its copy of the
// registry is (registry.Copy).
type FleetCopy struct {
	Name  string
	Store Admin
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
	Registry registry.Registry
}

// errScheduleRecorded stops registry.Update when the registry records the
// schedule already.
var errScheduleRecorded = errors.New("lease: the registry records the schedule already")

// ChangeFleetSchedule sets the fleet schedule of every region to text, on
// the operator's clock now with the notice rule of SetSchedule, in this
// order:
//
//  1. It reads every copy of the registry and refuses if they differ
//     (registry.ErrDiverged: run registry.Sync) or are not the copies the
//     registry records (ErrInvalid), or two are one store or one is not
//     the store recorded under its name (registry.ErrCopyIdentity), and checks the change on every
//     store's record (SetSchedule's refusals, with the marks of every
//     keyspace a registered region's holders lease in under the old or
//     the new schedule, region 0's always), before writing anything.
//  2. It records text in the registry (registry.Update: every copy, with
//     the version compare), unless it records text already; with no
//     registry, more than one store is refused (ErrInvalid: nothing would
//     keep their records one).
//  3. It sets every store's record (SetSchedule), in the copies' name
//     order, each only while that store's own copy of the registry still
//     records this change (registry.ErrConflict otherwise: another change
//     ran meanwhile). A store at text already is left as it is.
//
// Holders start only where the holder's schedule, the store's record and
// the store's copy of the registry agree (CheckHolderSchedule), and a
// running holder stops before the first instant its schedule and its
// store's record differ (SetSchedule's notice). So a change stopped half
// way leaves holders starting only in the regions whose store and copy
// agree, on one schedule (in step 2, the old one where the copy is not
// written yet; in step 3, the new one where the store is set), and the
// old schedule's running holders stop, in the regions changed, before it
// differs from the new. Two operators changing the schedule at once are
// ordered by the registry's first copy: the one whose registry version is
// overtaken stops before touching a store whose copy records the other's
// change, and a store it set just before is refused new holders (its
// record differs from its copy) and stops its running ones before the two
// differ — except when the other's whole change completes between this
// one's check of a store's copy and its write of that store's record (one
// store round trip; not protected yet: it needs the two in one store
// transaction): the record is then overwritten, and that region's running
// holders on a third, older schedule keep running while it agrees with
// this one. Running ChangeFleetSchedule again with the same text finishes a
// change (registry.Sync first, when the registry's copies differ), as long
// as the notice rule still admits it on the stores not yet set: finish it
// promptly.
func ChangeFleetSchedule(ctx context.Context, copies []FleetCopy, text string, now time.Time, notice time.Duration) (ScheduleChange, error) {
	canon, err := CanonicalSchedule(text)
	if err != nil {
		return ScheduleChange{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	reg, rcs, err := registry.Read(ctx, registryCopies(copies))
	if rcs == nil {
		return ScheduleChange{}, err
	}
	names := make([]string, len(rcs))
	stores := make([]Admin, len(rcs))
	for i, c := range rcs {
		names[i] = c.Name
		stores[i] = c.Store.(Admin) // built from a FleetCopy above
	}
	ch := ScheduleChange{Schedule: canon, Names: names, Was: make([]FleetSchedule, len(stores))}
	if err != nil {
		return ch, err
	}
	for i, st := range stores {
		if ch.Was[i], _, _, err = checkScheduleChange(ctx, st, canon, now, notice); err != nil {
			return ch, fmt.Errorf("copy %s: %w; nothing was changed", names[i], err)
		}
	}
	if reg.Version == 0 && len(stores) > 1 {
		return ch, fmt.Errorf("%w: the stores hold no region registry, which keeps their schedules one: create it first (snowfence regions add NAME --create "+
			"with every copy), or change one store at a time; nothing was changed", ErrInvalid)
	}
	// The registry first: its version compare, on the first copy, orders
	// two operators' changes, and a store's record is set only while its
	// own copy of the registry records this change.
	var at registry.Registry
	if reg.Version > 0 {
		at, err = registry.Update(ctx, rcs, func(r registry.Registry) (registry.Registry, error) {
			if r.Schedule == canon {
				return r, errScheduleRecorded
			}
			return r.WithSchedule(canon)
		})
		switch {
		case errors.Is(err, errScheduleRecorded):
			// A rerun: the registry records it; finish the stores.
		case err != nil:
			return ch, fmt.Errorf("record %q in the region registry: %w; no store was changed (copies the registry reached refuse new holders "+
				"until the change is finished: run the same snowfence schedule set again, or snowfence regions sync)", canon, err)
		}
		ch.Registry = at
	}
	for i, st := range stores {
		if reg.Version > 0 {
			own, err := st.Registry(ctx)
			switch {
			case err != nil:
				return ch, fmt.Errorf("read copy %s's registry before setting its store's record: %w; run the same snowfence schedule set again", names[i], err)
			case own.Schedule != canon || (at.Version > 0 && own.Version != at.Version):
				return ch, fmt.Errorf("%w: copy %s's registry is at version %d recording %q, not this change's: another change ran meanwhile; "+
					"its store's record is left as it is (holders are refused at start where the record and the registry differ); run snowfence schedule set again once it is done",
					registry.ErrConflict, names[i], own.Version, own.Schedule)
			}
		}
		set, err := SetSchedule(ctx, st, canon, now, notice)
		if err != nil {
			done := "no store was changed"
			if i > 0 {
				done = "the stores of " + strings.Join(names[:i], ", ") + " are at it"
			}
			return ch, fmt.Errorf("set the fleet schedule of copy %s to %q: %w; %s, and the region registry records it: holders are refused at start "+
				"where a store's record differs from it; run the same snowfence schedule set again, with every copy, soon", names[i], canon, err, done)
		}
		ch.Now = append(ch.Now, set)
	}
	return ch, nil
}

// RecordStoresSchedule reads the fleet schedule record of every copy's
// store and returns what a registry change (registry.Update's change, after
// its own) applies to the registry it makes: a registry that records no
// fleet schedule yet (one being created, or written before the registry
// kept it) records the stores' — refused with ErrSchedule, naming the
// command that fixes it, when the stores' records differ; one that records
// it is left as it is (every keeper refuses a holder, and every claim,
// where the store's record differs from it). snowfence regions add and
// retire apply it.
func RecordStoresSchedule(ctx context.Context, copies []FleetCopy) (func(registry.Registry) (registry.Registry, error), error) {
	recs := make([]FleetSchedule, len(copies))
	for i, c := range copies {
		fs, err := c.Store.FleetSchedule(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the fleet schedule of copy %d (%s): %w", i+1, c.Name, err)
		}
		recs[i] = fs
	}
	var differ error
	for i, fs := range recs[1:] {
		if fs.Text != recs[0].Text {
			differ = fmt.Errorf("%w: the region registry records the fleet schedule of every region, but the copies' stores keep different ones: copy 1 (%s) %q (version %d), copy %d (%s) %q (version %d); "+
				"make them one first with snowfence schedule set SCHEDULE naming every copy (the store flags and --copy), then run this again",
				ErrSchedule, copies[0].Name, recs[0].Text, recs[0].Version, i+2, copies[i+1].Name, fs.Text, fs.Version)
			break
		}
	}
	return func(next registry.Registry) (registry.Registry, error) {
		if next.Schedule != "" {
			return next, nil
		}
		if differ != nil {
			return next, differ
		}
		next.Schedule = recs[0].Text
		return next, nil
	}, nil
}

// AddRegionHome adds the region called name, whose holders lease from the
// store of the copy called home, to the registry kept in copies (every copy
// the registry records, home among them), as snowfence regions add does:
// the change through registry.Update with Registry.WithRegionHome at nowMs,
// under limit region numbers; the stores' fleet schedule recorded when the
// registry records none (RecordStoresSchedule); and refused with
// ErrSchedule while the home store's record is not the registry's schedule
// (CheckStoreSchedule), since the region's holders could never start there.
// With create false a store holding no registry is refused (ErrInvalid): a
// second registry would number its regions from 0 again.
func AddRegionHome(ctx context.Context, copies []FleetCopy, name, home string, create bool, nowMs int64, limit int) (registry.Region, error) {
	return AddRegionNumber(ctx, copies, name, home, registry.AnyNumber, create, nowMs, limit)
}

// AddRegionNumber is AddRegionHome under the region number given
// (registry.AnyNumber: the lowest no region ever had), refused with
// ErrInvalid when any region ever had it, retired ones included, or it is
// not below limit (Registry.WithRegionNumber), in the same conditional
// write on every copy.
func AddRegionNumber(ctx context.Context, copies []FleetCopy, name, home string, number int, create bool, nowMs int64, limit int) (registry.Region, error) {
	var homeStore Admin
	for _, c := range copies {
		if c.Name == home {
			homeStore = c.Store
		}
	}
	rcs := registryCopies(copies)
	if homeStore == nil {
		return registry.Region{}, fmt.Errorf("%w: home %s is none of the copies given", ErrInvalid, home)
	}
	record, err := RecordStoresSchedule(ctx, copies)
	if err != nil {
		return registry.Region{}, err
	}
	var g registry.Region
	_, err = registry.Update(ctx, rcs, func(reg registry.Registry) (registry.Registry, error) {
		if reg.Version == 0 && !create {
			return reg, fmt.Errorf("%w: no copy holds a region registry, and regions add creates one only with --create: "+
				"if the fleet has a registry, name its copies (--copy) and join this region's store with snowfence regions add-copy; "+
				"a second registry would number its regions from 0 again", ErrInvalid)
		}
		if reg.Version == 0 && number != registry.AnyNumber && number != 0 {
			// Holders that ran before the registry existed ran as region 0
			// (the default), unchecked: a registry whose first region is
			// another number leaves 0 to a later add, whose holders would
			// mint beside them.
			return reg, fmt.Errorf("%w: the registry's first region takes number 0, not %d: holders running before the registry existed are region 0's, and a later region given 0 would mint their IDs; add this region without --number, or after the first", ErrInvalid, number)
		}
		next, added, err := reg.WithRegionNumber(name, home, number, nowMs, limit)
		g = added
		if err != nil {
			return next, err
		}
		if next, err = record(next); err != nil {
			return next, err
		}
		if err := checkNumberUnusedElsewhere(ctx, copies, home, added.Number, next.Schedule); err != nil {
			return next, err
		}
		// The region's holders start only where the home store's record
		// is the registry's schedule: refuse a home they could never
		// start on, naming the command that makes it so.
		return next, CheckStoreSchedule(ctx, homeStore, home, next)
	})
	return g, err
}

// checkNumberUnusedElsewhere refuses, with ErrInUse, a region number that
// a copy other than home holds lease records of, in any keyspace of the
// number under schedule (every layout step's). A new region's holders
// lease only from its home; records of its number anywhere else were left
// by holders that ran as that number outside the registry — before it
// existed, every holder ran as region 0, unchecked — and any of them still
// running mints the IDs the new region's holders would, from a store that
// cannot fence them. The check is the operator's, at the add: a holder
// starting unchecked on such a store after it and before the registry
// reaches that store is not seen (every copy holds the registry once the
// add returns, and keepers check it from then on).
func checkNumberUnusedElsewhere(ctx context.Context, copies []FleetCopy, home string, number int, schedule string) error {
	steps := 1
	if sch, err := snowfence.ParseSchedule(schedule); err == nil {
		steps = len(sch.Steps())
	}
	for _, c := range copies {
		if c.Name == home {
			continue
		}
		for step := range steps {
			idx, err := KeyspaceOf(step, number)
			if err != nil {
				return err
			}
			ks, err := c.Store.AdminKeyspace(idx)
			if err != nil {
				return fmt.Errorf("read copy %s's leases of region number %d: %w", c.Name, number, err)
			}
			recs, err := ks.List(ctx)
			ks.Close()
			if err != nil {
				return fmt.Errorf("read copy %s's leases of region number %d: %w", c.Name, number, err)
			}
			if len(recs) > 0 {
				return fmt.Errorf("%w: copy %s holds %d lease %s of region number %d (keyspace %d, first machine %d): holders ran there as "+
					"region %d outside the registry (before it existed every holder ran as region 0), and any still running would mint the IDs "+
					"of this region's holders on its home %s; make %s this region's home, or give the region another number",
					ErrInUse, c.Name, len(recs), pluralWord(len(recs), "record", "records"), number, idx, recs[0].Machine, number, home, c.Name)
			}
		}
	}
	return nil
}
