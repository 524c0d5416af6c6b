package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
)

// Quarantine makes a number unclaimable and unrenewable as the operator's
// quarantine of a row does: holder lease.QuarantineHolder, lease_expiry
// lease.QuarantineExpiryMs, epoch + 1, in one upsert (a number without a
// row gets one). The old lease_expiry is kept in floor_ms. The current holder's next
// Extend fails with lease.ErrQuarantined and it stops at its mark. The same
// statement ends the holder's journal entry as quarantined, at that mark.
// Quarantining a quarantined number changes nothing and is not an error.
func (s *Store) Quarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return err
	}
	var epoch, floor int64
	err := s.pool.QueryRow(ctx, s.queries.quarantine, s.region, machine).Scan(&epoch, &floor)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		s.log.Info("machine number already quarantined", "machine", machine, "region", s.region)
		return nil
	case err != nil:
		return fmt.Errorf("pgstore: quarantine machine %d region %d: %w; check with Get whether it took effect, and retry", machine, s.region, err)
	}
	s.log.Warn("quarantined machine number: it can be neither claimed nor renewed", "machine", machine, "region", s.region,
		"epoch", epoch, "mark", lease.FormatMs(floor))
	return nil
}

// Unquarantine makes a quarantined number claimable again: holder ” and
// lease_expiry set to the mark kept at the quarantine (floor_ms), so the
// next holder starts above anything the holder before could have issued.
// It returns lease.ErrNotHeld if the number is not quarantined.
func (s *Store) Unquarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return err
	}
	var epoch, mark int64
	err := s.pool.QueryRow(ctx, s.queries.unquarantine, s.region, machine).Scan(&epoch, &mark)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: machine %d region %d is not quarantined, so there is nothing to undo", lease.ErrNotHeld, machine, s.region)
	case err != nil:
		return fmt.Errorf("pgstore: unquarantine machine %d region %d: %w; check with Get whether it took effect, and retry", machine, s.region, err)
	}
	s.log.Warn("unquarantined machine number: it can be claimed again", "machine", machine, "region", s.region,
		"epoch", epoch, "mark", lease.FormatMs(mark))
	return nil
}

// RaiseMarks raises the mark of every number in r to at least markMs and
// fences every holder in r, in one transaction of two statements: the
// first creates the missing rows and locks every row of r in order of
// number, the second changes them: free and held rows get
// lease_expiry ≥ markMs, every held row (not quarantined) loses its holder
// and gets epoch + 1, so a claim that survived in a restored store fails
// at its next Extend (lease.ErrLost) and its holder claims again at or
// above the mark; quarantined rows stay quarantined with the mark kept for
// after it raised; every row gets floor_ms ≥ markMs so no release records
// less; numbers without a row get a free one with the mark. It returns how
// many numbers' marks were below markMs or whose holder it fenced.
//
// The fenced holder's journal entry ends as raised, at the mark the write
// replaced (exact: the row was locked before it was read); the entry of a
// holder whose row was quarantined by hand, which no write ended, ends as
// quarantined at the mark kept then.
func (s *Store) RaiseMarks(ctx context.Context, r lease.Range, markMs int64) (int, error) {
	if err := s.open(); err != nil {
		return 0, err
	}
	if err := lease.CheckRange(r, lease.Unlimited); err != nil {
		return 0, err
	}
	var n int
	// READ COMMITTED whatever the pool's default: the raise's snapshot
	// follows the first statement's row locks.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var created, changed int
		if err := tx.QueryRow(ctx, s.queries.raiseLock, s.region, r.Lo, r.Hi, markMs).Scan(&created); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, s.queries.raise, s.region, r.Lo, r.Hi, markMs).Scan(&changed); err != nil {
			return err
		}
		n = created + changed
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pgstore: raise marks of %s region %d to %s: %w; it may have committed: retry (it is idempotent)",
			r, s.region, lease.FormatMs(markMs), s.schemaErr(err))
	}
	s.log.Warn("raised marks", "range", r.String(), "region", s.region, "mark", lease.FormatMs(markMs), "changed", n)
	return n, nil
}
