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
	if err := s.open(); err != nil {
		return lease.FleetSchedule{}, err
	}
	canon, err := lease.CanonicalSchedule(text)
	if err != nil {
		return lease.FleetSchedule{}, fmt.Errorf("%w: fleet schedule %q: %v", lease.ErrInvalid, text, err)
	}
	if prev < 0 {
		return lease.FleetSchedule{}, fmt.Errorf("%w: fleet schedule version %d is negative", lease.ErrInvalid, prev)
	}
	var version int64
	if prev == 0 {
		err = s.pool.QueryRow(ctx, s.queries.fleetInit, canon).Scan(&version)
	} else {
		err = s.pool.QueryRow(ctx, s.queries.fleetSet, canon, prev).Scan(&version)
	}
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
