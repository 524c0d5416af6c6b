package lease

import (
	"fmt"

	"github.com/snowfence/snowfence/internal/revert"
)

// otherClaim reports whether rec, the record of l's number read back,
// holds another claim than l under the same holder name and token (a
// token repeated after the store went back in time, or another keeper's
// claim under a shared holder name): two claims are told apart by their
// nonce, never by holder and token alone. Load-bearing for uniqueness:
// change only with scripts/prove-search nonce.
func otherClaim(rec Record, l *Lease) bool {
	return !revert.Nonce && rec.Claim != l.Claim
}

// uniqueHolder is the default holder string of a keeper of the process
// whose identity is h: h and "/k<N>", so that two keepers of one process
// never share a holder string, which a store could take for the same
// claimer. Load-bearing for uniqueness: change only with
// scripts/prove-search nonce.
func uniqueHolder(h string) string {
	if revert.Nonce {
		return h // the old behaviour: one holder string per process
	}
	return fmt.Sprintf("%s/k%d", h, keepers.Add(1))
}
