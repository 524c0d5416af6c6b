package pgstore

import (
	"fmt"
	"strings"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// Every claim runs READ COMMITTED, checked by the claim statement itself: a
// claim whose snapshot is taken before its locks could claim under a
// schedule an at-once change (fence_unused.go) has replaced.

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
	return "current_setting('transaction_isolation') = 'read committed'"
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
