package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
)

// FleetSchedule returns the fleet schedule kept in <table>_fleet (one row,
// id 1): lease.DefaultFleetSchedule at version 0 when no row was ever
// written. It is shared by every region of the table.
func (s *Store) FleetSchedule(ctx context.Context) (lease.FleetSchedule, error) {
	if err := s.open(); err != nil {
		return lease.FleetSchedule{}, err
	}
	var fs lease.FleetSchedule
	err := s.pool.QueryRow(ctx, s.queries.fleet).Scan(&fs.Text, &fs.Version)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return lease.FleetSchedule{Text: lease.DefaultFleetSchedule}, nil
	case err != nil:
		return lease.FleetSchedule{}, fmt.Errorf("pgstore: read the fleet schedule of %s: %w", s.name, s.schemaErr(err))
	}
	return fs, nil
}

// SetFleetSchedule writes text (canonicalised) as the fleet schedule if the
// stored version is still prev, in one statement: an insert of the row for
// prev 0, an update on the version otherwise. lease.ErrConflict if the
// version moved.
func (s *Store) SetFleetSchedule(ctx context.Context, prev int64, text string) (lease.FleetSchedule, error) {
	canon, err := s.scheduleToSet(prev, text)
	if err != nil {
		return lease.FleetSchedule{}, err
	}
	version, err := s.writeSchedule(ctx, s.pool, prev, canon)
	return s.scheduleWritten(ctx, prev, canon, version, err)
}

// SetFleetScheduleUnused is SetFleetSchedule made only while the table
// holds no lease record at all (lease.UnusedScheduleSetter): no row in the
// lease table — of any region, held, released, marked or quarantined — and
// no journal entry, counted in the same transaction as the write, after
// locking both tables against every claim, extension and mark write
// (unusedLock). Every claim writes a row and an entry and compares the
// stored schedule, so of a claim and this write, whichever comes second
// sees the other: a claim waiting on the lock is refused under the old
// schedule, and this write after a claim returns lease.ErrInUse with what
// it counted. The lock holds up renewals of the table's holders for the
// few milliseconds the transaction lasts (there are none when it
// succeeds).
func (s *Store) SetFleetScheduleUnused(ctx context.Context, prev int64, text string) (lease.FleetSchedule, error) {
	canon, err := s.scheduleToSet(prev, text)
	if err != nil {
		return lease.FleetSchedule{}, err
	}
	var version int64
	// READ COMMITTED: the count is the statement after the lock, and must
	// see every claim committed before the lock was granted.
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		rows, entries, err := s.countUnused(ctx, tx)
		if err != nil {
			return err
		}
		if rows > 0 || entries > 0 {
			return fmt.Errorf("%w: %d rows of lease records in %s and %d journal entries exist: the fleet schedule changes at once only on a "+
				"table that holds none; give the notice (a cutover at least 1 h past every clock and mark)", lease.ErrInUse, rows, s.name, entries)
		}
		version, err = s.writeSchedule(ctx, tx, prev, canon)
		return err
	})
	if errors.Is(err, lease.ErrInUse) {
		return lease.FleetSchedule{}, err
	}
	return s.scheduleWritten(ctx, prev, canon, version, err)
}

// scheduleToSet checks a fleet-schedule write's arguments, for
// SetFleetSchedule and SetFleetScheduleUnused: the store open, prev a
// version (0: never set), text a schedule; it returns text's canonical
// form.
func (s *Store) scheduleToSet(prev int64, text string) (string, error) {
	if err := s.open(); err != nil {
		return "", err
	}
	canon, err := lease.CanonicalSchedule(text)
	if err != nil {
		return "", fmt.Errorf("%w: fleet schedule %q: %v", lease.ErrInvalid, text, err)
	}
	if prev < 0 {
		return "", fmt.Errorf("%w: fleet schedule version %d is negative", lease.ErrInvalid, prev)
	}
	return canon, nil
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// writeSchedule writes canon as the fleet schedule if the stored version is
// still prev: an insert of the row for prev 0, an update on the version
// otherwise. pgx.ErrNoRows if the version moved.
func (s *Store) writeSchedule(ctx context.Context, q querier, prev int64, canon string) (int64, error) {
	var version int64
	if prev == 0 {
		return version, q.QueryRow(ctx, s.queries.fleetInit, canon).Scan(&version)
	}
	return version, q.QueryRow(ctx, s.queries.fleetSet, canon, prev).Scan(&version)
}

// scheduleWritten is the outcome of a fleet-schedule write of canon over
// version prev that returned version and err.
func (s *Store) scheduleWritten(ctx context.Context, prev int64, canon string, version int64, err error) (lease.FleetSchedule, error) {
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		cur, rerr := s.FleetSchedule(ctx)
		if rerr != nil {
			return lease.FleetSchedule{}, fmt.Errorf("%w: the fleet schedule is no longer at version %d; read it again and retry", lease.ErrConflict, prev)
		}
		return lease.FleetSchedule{}, fmt.Errorf("%w: the fleet schedule is at version %d (%q), not %d; read it again and retry",
			lease.ErrConflict, cur.Version, cur.Text, prev)
	case err != nil:
		return lease.FleetSchedule{}, fmt.Errorf("pgstore: set the fleet schedule of %s: %w; it may have committed: read it again",
			s.name, s.schemaErr(err))
	}
	fs := lease.FleetSchedule{Text: canon, Version: version}
	s.log.Warn("fleet schedule set", "schedule", canon, "version", version)
	return fs, nil
}

// why reads the stored fleet schedule ("v1" at version 0 when never set)
// in one statement, to explain a claim or extension that changed nothing.
func (s *Store) why(ctx context.Context) (lease.FleetSchedule, error) {
	var fs lease.FleetSchedule
	if err := s.pool.QueryRow(ctx, s.queries.why).Scan(&fs.Text, &fs.Version); err != nil {
		return lease.FleetSchedule{}, s.schemaErr(err)
	}
	return fs, nil
}
