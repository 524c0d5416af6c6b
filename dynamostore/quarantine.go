package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/lease"
)

// Quarantine makes number machine unclaimable and unrenewable with the
// operator's quarantine of an item — holder "QUARANTINED", lease_expiry
// 2100-01-01, one more epoch (lease.QuarantineHolder,
// lease.QuarantineExpiryMs) — and keeps the mark it had in
// quarantined_mark, for Unquarantine. The holder's next renewal fails with
// lease.ErrQuarantined and it stops at its mark. Quarantining a
// quarantined number does nothing. A held number's journal entry is ended
// (End quarantined) in the same write.
func (s *Store) Quarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, Machines); err != nil {
		return err
	}
	// Two writes, one for a number held under a journal entry (which the
	// quarantine ends in the same write) and one for any other; each
	// condition says which it is, and the old item returned by a failed
	// one says which to try next.
	held := true
	for range changeTries {
		expr := "SET holder = :q, lease_expiry = :far, quarantined_mark = if_not_exists(lease_expiry, :zero) ADD lease_epoch :one"
		cond := "(attribute_not_exists(holder) OR holder <> :q) AND NOT " + heldWithEntry
		vals := map[string]types.AttributeValue{":q": str(lease.QuarantineHolder), ":far": num(lease.QuarantineExpiryMs), ":zero": num(0), ":one": num(1)}
		if held {
			// The entry ends at the mark the holder holds (the expiry
			// before this write: operands read the item as it was), so a
			// later raise of the quarantined mark does not stretch it.
			expr = "SET holder = :q, lease_expiry = :far, quarantined_mark = if_not_exists(lease_expiry, :zero), " + endSetMark + "lease_expiry ADD lease_epoch :one"
			cond = heldWithEntry
			endVals(vals, lease.EndQuarantined)
		}
		_, err := s.update(ctx, machine, expr, cond, vals)
		if f, old := conditionFailed(err); f {
			it, perr := s.parseItem(old)
			if perr != nil {
				return fmt.Errorf("dynamostore: quarantine machine %d: %w", machine, perr)
			}
			if it.quarantined {
				s.log.Info("machine number already quarantined", "machine", machine)
				return nil
			}
			held = heldEntry(it)
			continue
		}
		if err != nil {
			return fmt.Errorf("dynamostore: quarantine machine %d: %w; the outcome is unknown: run it again (it is idempotent)", machine, err)
		}
		it, _ := s.read(ctx, machine)
		s.log.Warn("quarantined machine number", "machine", machine, "epoch", it.epoch, "mark", lease.FormatMs(it.preMarkMs), "holder_entry_ended", held)
		return nil
	}
	return fmt.Errorf("dynamostore: quarantine machine %d: the item changed under %d attempts in a row; run it again", machine, changeTries)
}

// changeTries bounds the writes an operator's action makes on one item
// that keeps changing between them (each failed condition returns the item
// that decides the next).
const changeTries = 8

// Unquarantine lifts a quarantine: it removes the holder and restores the
// mark kept by Quarantine, so the next holder starts above everything the
// old one could have issued. A number quarantined by hand (no
// quarantined_mark) gets the time now plus handReserve instead. The
// mark given back is never below the floor raise-marks left (mark_floor).
// It fails with lease.ErrNotHeld if the number is not quarantined.
func (s *Store) Unquarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, Machines); err != nil {
		return err
	}
	it, err := s.read(ctx, machine)
	if err != nil {
		return err
	}
	if !it.quarantined {
		return fmt.Errorf("%w: machine %d is not quarantined", lease.ErrNotHeld, machine)
	}
	mark := it.preMarkMs
	if !it.hasPreMark {
		mark = time.Now().Add(s.handReserve()).UnixMilli()
	}
	mark = max(mark, it.floorMs)
	// Conditioned on what the mark was computed from, not only the epoch:
	// raise-marks changes a quarantined item's marks without touching its
	// epoch, and its raised mark must not be undone.
	cond := "holder = :q AND lease_epoch = :e AND (attribute_not_exists(mark_floor) OR mark_floor <= :mark)"
	vals := map[string]types.AttributeValue{":q": str(lease.QuarantineHolder), ":e": num(int64(it.epoch)), ":mark": num(mark)}
	if it.hasPreMark {
		cond += " AND quarantined_mark = :pm"
		vals[":pm"] = num(it.preMarkMs)
	} else {
		cond += " AND attribute_not_exists(quarantined_mark)"
	}
	_, err = s.update(ctx, machine, "REMOVE holder, quarantined_mark SET lease_expiry = :mark", cond, vals)
	if f, old := conditionFailed(err); f {
		if now, perr := s.parseItem(old); perr == nil && now.exists && now.holder == "" && now.epoch == it.epoch && now.expiryMs == mark {
			return nil // an SDK retry of this write, which had committed
		}
		return fmt.Errorf("%w: machine %d changed while being unquarantined; look at it again", lease.ErrNotHeld, machine)
	}
	if err != nil {
		return fmt.Errorf("dynamostore: unquarantine machine %d: %w; the outcome is unknown: check with Get", machine, err)
	}
	s.log.Warn("unquarantined machine number", "machine", machine, "epoch", it.epoch, "mark", lease.FormatMs(mark))
	return nil
}

// handReserve is how far ahead of now Unquarantine puts the mark of a
// number quarantined by hand, whose holder's mark nobody kept: at least
// the longest reservation any holder of a DynamoDB store can have. That is
// not Config.MaxReserve, which nothing enforces on the holders (their
// keepers may run with another value, or another process's), but
// MaxRestoreWindow: StartKeeper refuses a keeper on this store whose
// restore window, max(Reserve, SelfFence) × 1.1 + 1 s, is longer, so every
// Reserve is below it, with clocks 8 % fast.
func (s *Store) handReserve() time.Duration {
	return max(s.cfg.MaxReserve+s.cfg.MaxReserve/10, MaxRestoreWindow)
}

// RaiseMarks raises the mark of every number in r to at least markMs and
// fences every holder, with conditional UpdateItems per number (creating
// the items of numbers never claimed). A number that is not quarantined
// gets, in one write, lease_expiry = markMs (if lower), its holder removed
// and one more epoch, so a holder whose claim survived in a restored table
// gets lease.ErrLost at its next extension instead of extending above the
// raised mark; a quarantined number with a kept mark gets quarantined_mark = markMs (its
// holder was fenced by the quarantine). Every item also gets mark_floor =
// markMs, below which no release records a mark and no unquarantine gives
// one back. It returns how many items it changed (a mark raised or a
// holder fenced).
func (s *Store) RaiseMarks(ctx context.Context, r lease.Range, markMs int64) (int, error) {
	if err := s.open(); err != nil {
		return 0, err
	}
	if err := lease.CheckRange(r, Machines); err != nil {
		return 0, err
	}
	changed := 0
	fail := func(n int, err error) (int, error) {
		return changed, fmt.Errorf("dynamostore: raise marks in %s: machine %d: %w; %d changed so far; run it again (it is idempotent)", r, n, err, changed)
	}
	for n := r.Lo; n <= r.Hi; n++ {
		raised, it, err := s.raiseMark(ctx, n, markMs)
		if err != nil {
			return fail(n, err)
		}
		if raised {
			changed++
			continue
		}
		// The mark is already at or above markMs: fence its holder, keep
		// the mark.
		fenced, err := s.fenceHolder(ctx, n, it)
		if err != nil {
			return fail(n, err)
		}
		if fenced {
			changed++
		}
		// Only a kept mark is raised: a number quarantined by hand has
		// none, and Unquarantine gives it back at now + handReserve, above
		// its holder's lost mark, or at the floor set below if higher. A
		// kept mark written here would replace that bound with markMs.
		_, err = s.update(ctx, n, "SET quarantined_mark = :m, mark_floor = :m",
			"holder = :q AND quarantined_mark < :m", map[string]types.AttributeValue{":m": num(markMs), ":q": str(lease.QuarantineHolder)})
		if err == nil {
			changed++
			continue
		}
		if f, _ := conditionFailed(err); !f {
			return fail(n, err)
		}
		// The mark is already higher, but a release may record a lower
		// one: leave the floor.
		_, err = s.update(ctx, n, "SET mark_floor = :m", "attribute_not_exists(mark_floor) OR mark_floor < :m",
			map[string]types.AttributeValue{":m": num(markMs)})
		if f, _ := conditionFailed(err); err != nil && !f {
			return fail(n, err)
		}
	}
	s.log.Warn("raised marks and fenced every holder", "range", r.String(), "mark", lease.FormatMs(markMs), "changed", changed)
	return changed, nil
}

// raiseMark is RaiseMarks' first write on number n: if the number has no
// item, or its mark is below markMs and it is not quarantined, the mark
// and the floor become markMs and the holder is fenced (removed, one more
// epoch), ending its journal entry (End raised, EndMs the mark replaced)
// in the same write. raised is false, with the item the condition saw, if
// the condition did not hold.
func (s *Store) raiseMark(ctx context.Context, n int, markMs int64) (raised bool, it item, err error) {
	const (
		raisable = "(attribute_not_exists(machine_id) OR (lease_expiry < :m AND (attribute_not_exists(holder) OR holder <> :q)))"
		expr     = "SET lease_expiry = :m, mark_floor = :m REMOVE holder ADD lease_epoch :one"
		exprEnd  = "SET lease_expiry = :m, mark_floor = :m, " + endSetMark + "lease_expiry REMOVE holder ADD lease_epoch :one"
	)
	held := false
	for range changeTries {
		vals := map[string]types.AttributeValue{":m": num(markMs), ":q": str(lease.QuarantineHolder), ":one": num(1)}
		e, cond := expr, raisable+" AND NOT "+heldWithEntry
		if held {
			e, cond = exprEnd, raisable+" AND "+heldWithEntry
			endVals(vals, lease.EndRaised)
		}
		_, err := s.update(ctx, n, e, cond, vals)
		if err == nil {
			return true, item{}, nil
		}
		f, old := conditionFailed(err)
		if !f {
			return false, item{}, err
		}
		if it, err = s.parseItem(old); err != nil {
			return false, item{}, err
		}
		if it.exists && (it.quarantined || !it.hasExpiry || it.expiryMs >= markMs) {
			return false, it, nil
		}
		held = heldEntry(it)
	}
	return false, item{}, fmt.Errorf("the item changed under %d attempts in a row", changeTries)
}

// fenceHolder is RaiseMarks' write for a number whose mark is already at
// or above the raised one: its holder, if any (not a quarantine), is
// removed with one more epoch, and its journal entry ended (End raised,
// EndMs the mark it held) in the same write. it is the item the last
// condition saw; the first write is made whatever it says, as a holder may
// have come since.
func (s *Store) fenceHolder(ctx context.Context, n int, it item) (bool, error) {
	const (
		holding = "attribute_exists(holder) AND holder <> :q"
		expr    = "REMOVE holder ADD lease_epoch :one"
		exprEnd = "SET " + endSetMark + "lease_expiry REMOVE holder ADD lease_epoch :one"
	)
	for range changeTries {
		vals := map[string]types.AttributeValue{":q": str(lease.QuarantineHolder), ":one": num(1)}
		e, cond := expr, holding+" AND NOT "+heldWithEntry
		if heldEntry(it) {
			e, cond = exprEnd, heldWithEntry
			endVals(vals, lease.EndRaised)
		}
		_, err := s.update(ctx, n, e, cond, vals)
		if err == nil {
			return true, nil
		}
		f, old := conditionFailed(err)
		if !f {
			return false, err
		}
		if it, err = s.parseItem(old); err != nil {
			return false, err
		}
		if !it.exists || it.holder == "" || it.quarantined {
			return false, nil
		}
	}
	return false, fmt.Errorf("the item changed under %d attempts in a row", changeTries)
}
