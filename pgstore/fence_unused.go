package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/internal/revert"
)

// countUnused counts, in tx, the rows of the lease table and the entries of
// its journal, after locking both against every claim, extension and mark
// write until tx ends (queries.unusedLock), for a fleet-schedule change at
// once (SetFleetScheduleUnused), which only a table holding neither may
// make: a holder that claimed between the operator's read and the change
// may already issue under the old schedule, and its IDs and marks are what
// the notice the change skips protects.
// Load-bearing for uniqueness: change only with scripts/prove-search unused.
func (s *Store) countUnused(ctx context.Context, tx pgx.Tx) (rows, entries int64, err error) {
	if revert.Unused {
		return 0, 0, nil
	}
	if _, err := tx.Exec(ctx, s.queries.unusedLock); err != nil {
		return 0, 0, err
	}
	err = tx.QueryRow(ctx, s.queries.unused).Scan(&rows, &entries)
	return rows, entries, err
}

// claimReadCommitted runs f, a claim's statement, in a transaction of its
// own at READ COMMITTED, whatever the session's default (the URL, the role,
// the database, or another user of a pool given to New, may have set
// REPEATABLE READ or SERIALIZABLE, and a transaction pooler hands each
// transaction another server session). A change of the fleet schedule at
// once (countUnused) holds claims off with its lock and relies on a claim
// that waited on the lock taking its snapshot after it, so that it
// compares the schedule written: in READ COMMITTED a statement's snapshot
// follows its locks; in REPEATABLE READ or SERIALIZABLE it is taken
// before, and a claim that waited claimed under the old schedule beside
// holders of the new one. (It was once a check of the pool's isolation,
// made until it first succeeded: a session whose default changed later
// went unseen — an attack showed the duplicate.)
// Load-bearing for uniqueness: change only with scripts/prove-search unused.
func (s *Store) claimReadCommitted(ctx context.Context, f func(q querier) error) error {
	if revert.Unused {
		return f(s.pool)
	}
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error { return f(tx) })
}
