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
// quarantined number does nothing.
func (s *Store) Quarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, Machines); err != nil {
		return err
	}
	_, err := s.update(ctx, machine,
		"SET holder = :q, lease_expiry = :far, quarantined_mark = if_not_exists(lease_expiry, :zero) ADD lease_epoch :one",
		"attribute_not_exists(holder) OR holder <> :q",
		map[string]types.AttributeValue{":q": str(lease.QuarantineHolder), ":far": num(lease.QuarantineExpiryMs), ":zero": num(0), ":one": num(1)})
	if f, _ := conditionFailed(err); f {
		s.log.Info("machine number already quarantined", "machine", machine)
		return nil
	}
	if err != nil {
		return fmt.Errorf("dynamostore: quarantine machine %d: %w; the outcome is unknown: run it again (it is idempotent)", machine, err)
	}
	it, _ := s.read(ctx, machine)
	s.log.Warn("quarantined machine number", "machine", machine, "epoch", it.epoch, "mark", lease.FormatMs(it.preMarkMs))
	return nil
}

// Unquarantine lifts a quarantine: it removes the holder and restores the
// mark kept by Quarantine, so the next holder starts above everything the
// old one could have issued. A number quarantined by hand (no
// quarantined_mark) gets the time now plus Config.MaxReserve instead. The
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
		mark = time.Now().Add(s.cfg.MaxReserve).UnixMilli()
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

// RaiseMarks raises the mark of every number in r to at least markMs and
// fences every holder, with conditional UpdateItems per number (creating
// the items of numbers never claimed). A number that is not quarantined
// gets, in one write, lease_expiry = markMs (if lower), its holder removed
// and one more epoch, so a holder whose claim survived in a restored table
// gets lease.ErrLost at its next extension instead of extending above the
// raised mark; a quarantined number gets quarantined_mark = markMs (its
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
		vals := map[string]types.AttributeValue{":m": num(markMs), ":q": str(lease.QuarantineHolder), ":one": num(1)}
		_, err := s.update(ctx, n, "SET lease_expiry = :m, mark_floor = :m REMOVE holder ADD lease_epoch :one",
			"attribute_not_exists(machine_id) OR (lease_expiry < :m AND (attribute_not_exists(holder) OR holder <> :q))", vals)
		if err == nil {
			changed++
			continue
		}
		if f, _ := conditionFailed(err); !f {
			return fail(n, err)
		}
		// The mark is already at or above markMs: fence its holder, keep
		// the mark.
		_, err = s.update(ctx, n, "REMOVE holder ADD lease_epoch :one", "attribute_exists(holder) AND holder <> :q",
			map[string]types.AttributeValue{":q": str(lease.QuarantineHolder), ":one": num(1)})
		if err == nil {
			changed++
		} else if f, _ := conditionFailed(err); !f {
			return fail(n, err)
		}
		_, err = s.update(ctx, n, "SET quarantined_mark = :m, mark_floor = :m",
			"holder = :q AND (attribute_not_exists(quarantined_mark) OR quarantined_mark < :m)", map[string]types.AttributeValue{":m": num(markMs), ":q": str(lease.QuarantineHolder)})
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
