package k8sstore

import (
	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// A claim is told by its nonce: an epoch repeats once the data went back
// in time, and a holder name can be shared (two processes, two keepers of
// one process), so holder and epoch alone do not identify a claim.

// ownAttempt reports whether o, read back after a claim attempt of unknown
// outcome by holder with nonce, to epoch, shows that very attempt
// committed: only the attempt that wrote the nonce adopts the record,
// never another claimer's under the same holder name and epoch.
// Load-bearing for uniqueness: change only with scripts/prove-search nonce.
func ownAttempt(o object, nonce, holder string, epoch uint64) bool {
	if !revert.Nonce {
		return o.exists && o.rec.Claim == nonce && o.rec.Holder == holder
	}
	return o.exists && o.rec.Holder == holder && o.rec.Epoch == epoch
}

// otherClaim reports whether r, a record naming l's holder and epoch,
// holds another claim than l (the epoch repeated after the data went
// back in time, or another claimer shares the holder name).
// Load-bearing for uniqueness: change only with scripts/prove-search nonce.
func otherClaim(r record, l *lease.Lease) bool {
	return !revert.Nonce && r.Claim != l.Claim
}
