package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
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

// checkIsolation refuses claims, with lease.ErrInvalid, on a pool whose
// sessions do not run READ COMMITTED (Connect sets it; a pool given to New
// takes the URL's, role's or database's default). A change of the fleet
// schedule at once (countUnused) holds claims off with its lock and relies
// on a claim that waited on the lock taking its snapshot after it, so that
// it compares the schedule written: in READ COMMITTED a statement's
// snapshot follows its locks; in REPEATABLE READ or SERIALIZABLE it is
// taken before, and a claim that waited claimed under the old schedule
// beside holders of the new one. Checked until it once succeeds.
// Load-bearing for uniqueness: change only with scripts/prove-search unused.
func (s *Store) checkIsolation(ctx context.Context) error {
	if revert.Unused || s.readCommitted.Load() {
		return nil
	}
	var level string
	if err := s.pool.QueryRow(ctx, "SELECT current_setting('transaction_isolation')").Scan(&level); err != nil {
		return fmt.Errorf("pgstore: read the sessions' transaction isolation: %w; retry", err)
	}
	if level != "read committed" {
		return fmt.Errorf("%w: pgstore: the pool's sessions run %s; the lease table's statements need READ COMMITTED "+
			"(set default_transaction_isolation=read committed in the URL or for the role, or use Connect, which does)", lease.ErrInvalid, strings.ToUpper(level))
	}
	s.readCommitted.Store(true)
	return nil
}
