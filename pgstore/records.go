package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
)

// row is one row of the lease table.
type row struct {
	machine                  int
	holder                   string
	expiryMs, epoch, floorMs int64
	// nonce is the claim_nonce the last claim attempt wrote: only the
	// attempt that wrote it may adopt the row as its claim.
	nonce string
	// renewal is the renewal value the holder's last extension wrote
	// (lease.Renewals); empty after a claim.
	renewal string
}

func (r row) quarantined() bool { return r.holder == lease.QuarantineHolder }

// mark is the row's high-water mark: lease_expiry, or for a quarantined
// row the mark kept from before the quarantine.
func (r row) mark() int64 {
	if r.quarantined() {
		return r.floorMs
	}
	return r.expiryMs
}

func (s *Store) record(r row) lease.Record {
	rec := lease.Record{Machine: r.machine, Region: s.region, Holder: r.holder, Token: uint64(r.epoch), MarkMs: r.mark(), Quarantined: r.quarantined()}
	if r.holder != "" {
		rec.ExpiresMs = r.expiryMs
	}
	if r.holder != "" && !r.quarantined() {
		rec.Claim, rec.Renewal = r.nonce, r.renewal
	}
	return rec
}

func scanRow(rows pgx.CollectableRow) (row, error) {
	var r row
	err := rows.Scan(&r.machine, &r.holder, &r.expiryMs, &r.epoch, &r.floorMs, &r.nonce, &r.renewal)
	return r, err
}

// read returns machine n's row, or ok false if it has none.
func (s *Store) read(ctx context.Context, n int) (r row, ok bool, err error) {
	rows, _ := s.pool.Query(ctx, s.queries.get, s.region, n)
	r, err = pgx.CollectExactlyOneRow(rows, scanRow)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return row{machine: n}, false, nil
	case err != nil:
		return row{}, false, fmt.Errorf("pgstore: read machine %d region %d: %w", n, s.region, err)
	}
	return r, true, nil
}

// Get returns the record of one number: holder (lease.QuarantineHolder when
// quarantined), epoch as token, mark, and the lease's expiry while held
// (which, in a table, is the mark). A number without a row reads as a zero
// record. lease.ErrRestored instead if the row shows the table went back
// in time since this Store value last saw it (signs.go).
func (s *Store) Get(ctx context.Context, machine int) (lease.Record, error) {
	if err := s.open(); err != nil {
		return lease.Record{}, err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return lease.Record{}, err
	}
	sp := s.before(machine)
	r, ok, err := s.read(ctx, machine)
	if err != nil {
		return lease.Record{}, err
	}
	if err := s.saw(sp, machine, r, ok); err != nil {
		return lease.Record{}, err
	}
	return s.record(r), nil
}

// List returns the records of every row of the store's region, in order of
// number, from one query; lease.ErrRestored instead if the rows show the
// table went back in time (signs.go).
func (s *Store) List(ctx context.Context) ([]lease.Record, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	sp := s.watch.Before(s.region, 0, math.MaxInt32)
	rows, _ := s.pool.Query(ctx, s.queries.list, s.region)
	rs, err := pgx.CollectRows(rows, scanRow)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list region %d: %w", s.region, err)
	}
	if err := s.sawScan(sp, rs); err != nil {
		return nil, err
	}
	recs := make([]lease.Record, 0, len(rs))
	for _, r := range rs {
		recs = append(recs, s.record(r))
	}
	return recs, nil
}
