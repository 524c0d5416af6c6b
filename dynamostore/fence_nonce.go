package dynamostore

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// withClaim adds the compare on l's claim nonce to a condition on l and its
// value to vals (nothing under revert.Nonce).
// A repeated epoch or a shared holder name is thus never taken for l.
// Load-bearing for uniqueness: change only with scripts/prove-search nonce.
func withClaim(cond string, vals map[string]types.AttributeValue, l *lease.Lease) string {
	if revert.Nonce {
		return cond
	}
	vals[":my_claim"] = str(l.Claim)
	return cond + claimMatches
}

// otherClaim reports whether item it, which names l's holder and epoch,
// holds another claim than l (the epoch repeated after the table went back
// in time, or another claimer shares the holder name). // Load-bearing for uniqueness: change only with scripts/prove-search nonce.
func otherClaim(it item, l *lease.Lease) bool {
	return !revert.Nonce && it.nonce != l.Claim
}

// ownAttempt reports whether item it, read back after a claim attempt of
// unknown outcome by holder with nonce writing expiry, shows that attempt
// committed: only the attempt that wrote the nonce adopts the item. // Load-bearing for uniqueness: change only with scripts/prove-search nonce.
func ownAttempt(it item, nonce, holder string, expiry int64) bool {
	if !revert.Nonce {
		return it.nonce == nonce && it.holder == holder
	}
	return it.holder == holder && it.expiryMs == expiry
}
