package k8sstore

import (
	"fmt"

	"github.com/snowfence/snowfence/lease"
)

// RawKey implements lease.RawKeyer: the Lease object of number n in the
// store's keyspace, as namespace/name, in Key and Keys.
// lease.ErrInvalid for a negative number.
func (s *Store) RawKey(n int) (lease.RawKey, error) {
	if n < 0 {
		return lease.RawKey{}, fmt.Errorf("%w: machine number %d is negative", lease.ErrInvalid, n)
	}
	k := s.cfg.Namespace + "/" + s.name(n)
	return lease.RawKey{Store: "kubernetes", Keyspace: s.region, Machine: n, Key: k, Keys: []string{k}}, nil
}
