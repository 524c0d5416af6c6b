package pgstore

import (
	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// A claim is told by its nonce: an epoch can repeat once the table went
// back in time, and a holder name can be shared, so holder and epoch alone
// do not identify a claim.

// claimMatches is the SQL clause comparing the row's claim_nonce with the
// lease's ($n, the statement's parameter). // Load-bearing for uniqueness: change only with scripts/prove-search nonce.
func claimMatches(n string) string {
	if !revert.Nonce {
		return `claim_nonce = ` + n
	}
	return n + `::text IS NOT NULL` // compares nothing
}

// otherClaim reports whether row r, which names l's holder and epoch,
// holds another claim than l. // Load-bearing for uniqueness: change only with scripts/prove-search nonce.
func otherClaim(r row, l *lease.Lease) bool {
	return !revert.Nonce && r.nonce != l.Claim
}

// ownAttempt reports whether row r, read back after a claim attempt of
// unknown outcome by holder with nonce on a row at epoch prevEpoch, shows
// that attempt committed: only the attempt that wrote the nonce adopts the
// row. // Load-bearing for uniqueness: change only with scripts/prove-search nonce.
func ownAttempt(r row, nonce, holder string, prevEpoch int64) bool {
	if !revert.Nonce {
		return r.nonce == nonce && r.holder == holder
	}
	return r.holder == holder && r.epoch == prevEpoch+1
}
