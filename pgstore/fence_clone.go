package pgstore

import "github.com/snowfence/snowfence/internal/revert"

// renewalMatches is the SQL clause comparing the row's renewal value with
// those the holder wrote or sent ($n, lease.Renewals.Accepted): a second
// process renewing the same claim (a clone) writes others, and its
// extensions then fail rather than renew beside the original's. // Load-bearing for uniqueness: change only with scripts/prove-search clone.
func renewalMatches(n string) string {
	if !revert.Clone {
		return `renewal = ANY(` + n + `::text[])`
	}
	return n + `::text[] IS NOT NULL` // compares nothing
}
