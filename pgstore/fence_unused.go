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
