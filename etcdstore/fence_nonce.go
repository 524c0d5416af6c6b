package etcdstore

import (
	"fmt"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// sameClaim returns lease.ErrLost unless l is the claim h records: same
// machine and token, but another etcd lease, is another claim (a token
// repeated after etcd went back in time, or a forged lease). A lease with
// no Claim (made by hand) is judged by its token alone. // Load-bearing for uniqueness: change only with scripts/prove-search nonce.
func (s *Store) sameClaim(l *lease.Lease, h *held) error {
	s.mu.Lock()
	id := h.etcdLease
	s.mu.Unlock()
	if revert.Nonce || l.Claim == "" || l.Claim == claimID(id) {
		return nil
	}
	return fmt.Errorf("%w: machine %d region %d token %d is held by another claim (etcd lease %s, not this lease's %s); stop issuing on it and claim again",
		lease.ErrLost, l.Machine, l.Region, l.Token, claimID(id), l.Claim)
}
