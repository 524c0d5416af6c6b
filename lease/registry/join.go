package registry

import (
	"context"
	"fmt"
	"slices"
)

// A region added after the registry was created, with a store of its own,
// needs a copy of the registry in that store before its holders can start
// by name there. Join gives it one: every later change writes it
// too, and refuses to run without it.

// Join adds the copy joining to the registry kept in copies (every
// copy the registry records, named as it records them): the copies must
// agree (ErrDiverged), be the ones recorded (ErrInvalid) and be
// the stores recorded under their names (ErrCopyIdentity), and joining's
// store must be none of theirs (ErrCopyIdentity) and hold no registry
// (ErrDiverged otherwise), and when the registry records the fleet
// schedule, joining's store must keep it as its fleet schedule record
// (ErrSchedule, naming the command that sets it: CheckStoreSchedule). The
// registry, one version on, records
// every copy with its identity, joining's included, and is written to
// copies in name order, each with its version compare (the first decides
// between the join and a change made at once, as in Update), then
// to joining's store if it holds none (CreateRegistry). A registry must be
// written first (ErrInvalid: create it with a change naming every copy).
//
// A join that stopped half way is finished by Sync with every
// copy, joining's included; running the same Join again finishes
// it too once copies all record joining (joining's copy empty or equal to
// theirs), without comparing the schedules again: a store holding a copy
// refuses every claim while its record differs from the copy's schedule,
// which a store holding none could not do.
func Join(ctx context.Context, copies []Copy, joining Copy, check func(context.Context, Registry) error) (Registry, error) {
	copies, names, err := sortedCopies(copies)
	if err != nil {
		return Registry{}, err
	}
	all, allNames, err := sortedCopies(append(slices.Clone(copies), joining))
	if err != nil {
		return Registry{}, err
	}
	allIDs, err := readIdentities(ctx, all)
	if err != nil {
		return Registry{}, err
	}
	ids := make([]string, len(copies))
	for i, c := range copies {
		ids[i] = allIDs[slices.Index(allNames, c.Name)]
	}
	for attempt := range registryRetries {
		cur, err := readCopies(ctx, copies, names, ids)
		if again, werr := waitBehind(ctx, err, attempt); werr != nil {
			return Registry{}, werr
		} else if again {
			continue
		}
		if err != nil {
			return Registry{}, err
		}
		if cur.Version == 0 {
			return cur, fmt.Errorf("%w: no region registry is written yet, so there is nothing for copy %s to join: create it with snowfence regions add NAME --create naming every copy, %s included",
				ErrInvalid, joining.Name, joining.Name)
		}
		if slices.Equal(cur.Copies, allNames) {
			// Joined already: finish it if joining's copy was not written.
			if err := checkIdentities(cur, allNames, allIDs); err != nil {
				return cur, err
			}
			return cur, writeJoined(ctx, joining, cur)
		}
		if err := sameCopies(cur, names); err != nil {
			return cur, err
		}
		if err := checkIdentities(cur, names, ids); err != nil {
			return cur, err
		}
		theirs, err := joining.Store.Registry(ctx)
		if err != nil {
			return cur, fmt.Errorf("read the registry's copy %s (joining): %w", joining.Name, err)
		}
		if theirs.Version != 0 {
			return cur, fmt.Errorf("%w: copy %s, joining, holds a region registry already (version %d, %d regions): a store joins with none; "+
				"compare it with the others (snowfence regions list on each store) and, if it is left over from elsewhere, remove it from that store before joining",
				ErrDiverged, joining.Name, theirs.Version, len(theirs.Regions))
		}
		if check != nil {
			if err := check(ctx, cur); err != nil {
				return cur, fmt.Errorf("%w; copy %s did not join, nothing was written", err, joining.Name)
			}
		}
		next := Registry{Version: cur.Version + 1, Regions: slices.Clone(cur.Regions), Copies: allNames, CopyIdentities: allIDs, Schedule: cur.Schedule}
		again, later, err := writeCopies(ctx, copies, next)
		switch {
		case again:
			continue // another change won the first copy: start again from it
		case later != "":
			return next, fmt.Errorf("%w: copy %s not written (%w): copy %s, written first, records copy %s at version %d; "+
				"finish the join with snowfence regions sync naming every copy, %s included, before any other change",
				ErrDiverged, later, err, copies[0].Name, joining.Name, next.Version, joining.Name)
		case err != nil:
			return cur, err
		}
		return next, writeJoined(ctx, joining, next)
	}
	return Registry{}, fmt.Errorf("%w: the registry changed under %d attempts in a row; try again", ErrConflict, registryRetries)
}

// writeJoined gives joining's store the registry reg that records it,
// unless it holds reg already.
func writeJoined(ctx context.Context, joining Copy, reg Registry) error {
	if err := joining.Store.CreateRegistry(ctx, reg); err != nil {
		return fmt.Errorf("%w: copy %s, joining, not written (%w), while every other copy records it at version %d: "+
			"finish the join with snowfence regions sync naming every copy, %s included, before any other change",
			ErrDiverged, joining.Name, err, reg.Version, joining.Name)
	}
	return nil
}

// oneCopyJoined reports whether next is prev with one copy joined
// (Join): the regions and the schedule unchanged, and the copies
// and identities prev records (every copy but one of next's, when prev
// records none) kept, with one more.
func oneCopyJoined(prev, next Registry) bool {
	if next.Version != prev.Version+1 || !slices.Equal(prev.Regions, next.Regions) || prev.Schedule != next.Schedule ||
		len(next.CopyIdentities) != len(next.Copies) || len(next.Copies) < 2 {
		return false
	}
	if len(prev.Copies) == 0 {
		return true
	}
	if len(next.Copies) != len(prev.Copies)+1 {
		return false
	}
	for i := range next.Copies {
		names := slices.Delete(slices.Clone(next.Copies), i, i+1)
		ids := slices.Delete(slices.Clone(next.CopyIdentities), i, i+1)
		if slices.Equal(names, prev.Copies) && (len(prev.CopyIdentities) == 0 || slices.Equal(ids, prev.CopyIdentities)) {
			return true
		}
	}
	return false
}
