package zkstore

import (
	"fmt"

	"github.com/snowfence/snowfence/lease"
)

var _ lease.RawKeyer = (*Store)(nil)

// RawKey implements lease.RawKeyer: the lease znode of number n in the
// store's keyspace (<path>/leases/<keyspace>/<n>) as Key, and in Keys
// that znode and the parent of its journal entries. The claim child
// beneath the lease znode is named after the record's claim nonce
// (fence_zkchild.go). lease.ErrInvalid for a negative number.
func (s *Store) RawKey(n int) (lease.RawKey, error) {
	if n < 0 {
		return lease.RawKey{}, fmt.Errorf("%w: machine number %d is negative", lease.ErrInvalid, n)
	}
	return lease.RawKey{Store: "zookeeper", Keyspace: s.region, Machine: n, Key: s.path(n),
		Keys: []string{s.path(n), s.journalDir(n)}}, nil
}
