package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// Every claim runs READ COMMITTED, checked by the claim statement itself: a
// claim whose snapshot is taken before its locks could claim under a
// schedule an at-once change (fence_unused.go) has replaced. And every
// claim, extension and release is a transaction of its own: one run on a
// session that other code sharing the pool left inside a transaction would
// be answered, then rolled back with that transaction.
//
// The fence's functions are called by their schema (pg_catalog.…): a
// session whose search_path puts another schema before pg_catalog could
// otherwise answer them with functions of its own.

// readCommittedClause is the claim statement's condition that its own
// transaction runs READ COMMITTED (Connect sets it; a pool given to New
// takes the URL's, role's or database's default, and other code sharing
// the pool may SET it on a session at any time). A change of the fleet
// schedule at once (countUnused) holds claims off with its lock and relies
// on a claim that waited on the lock taking its snapshot after it, so that
// it compares the schedule written: in READ COMMITTED a statement's
// snapshot follows its locks; in REPEATABLE READ or SERIALIZABLE it is
// taken before, and a claim that waited would claim under the old
// schedule beside holders of the new one. Checked by the statement itself,
// on every claim: a check made once, or in a statement of its own, says
// nothing of the session a later claim runs on.
// Load-bearing for uniqueness: change only with scripts/prove-search isolation.
func readCommittedClause() string {
	if revert.Isolation {
		return "true"
	}
	return "pg_catalog.current_setting('transaction_isolation') = 'read committed'"
}

// isolationAllowsClaim reports whether a claim statement that ran in a
// transaction of isolation level (as current_setting names it) may have
// claimed. // Load-bearing for uniqueness: change only with scripts/prove-search isolation.
func isolationAllowsClaim(level string) bool {
	return revert.Isolation || level == "read committed"
}

// isolationRefused is the error of a claim that its statement refused for
// running at isolation level.
func isolationRefused(level string) error {
	return fmt.Errorf("%w: pgstore: the claim ran in a %s transaction and was refused; the lease table's claims need READ COMMITTED "+
		"(use Connect, which sets it for its sessions, or keep default_transaction_isolation at read committed in the URL, "+
		"for the role and the database, and in any code that shares the pool)", lease.ErrInvalid, strings.ToUpper(level))
}

// ownTransaction runs f on a session of the pool that is in no
// transaction, so that f's one statement commits on its own when it
// returns; a session some other code left inside a transaction (a pool
// hook's BEGIN, a connection given back mid-transaction) is refused with
// lease.ErrInvalid before anything is sent: a claim or renewal answered
// inside it would be rolled back with it, after the holder was told it
// holds. // Load-bearing for uniqueness: change only with scripts/prove-search isolation.
func (s *Store) ownTransaction(ctx context.Context, what string, f func(c *pgxpool.Conn) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if st := c.Conn().PgConn().TxStatus(); st != 'I' && !revert.Isolation {
		return fmt.Errorf("%w: pgstore: %s: the pool gave a session that is inside a transaction (status %q), where the statement would "+
			"not commit on its own; nothing was sent. Code that shares the pool must not leave its sessions inside a transaction "+
			"(a hook's BEGIN, a connection released mid-transaction), or give the store a pool of its own", lease.ErrInvalid, what, st)
	}
	return f(c)
}
