package dynamostore_test

import (
	"testing"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// TestConformance runs the suites every lease store passes (the fence
// contract's, the operator's actions', the registry copy's), each check on a
// table of its own in dynalite. Its Rollback writes the table's items back
// from a copy (copyAside).
func TestConformance(t *testing.T) {
	endpoint(t)
	h := leasetest.Harness{
		New: func(t *testing.T) lease.Store { return newStore(t) },
		Reopen: func(t *testing.T, s lease.Store) lease.Store {
			return connect(t, s.(*dynamostore.Store).Table(), 0)
		},
		ClockExpiry: true,
		Rollback: func(t *testing.T, s lease.Store) func() {
			return copyAside(t, s.(*dynamostore.Store))
		},
		// Behind a shim of its own that drops the next write's reply, with
		// no SDK retry: the store decides by a re-read.
		LoseReply: func(t *testing.T) (lease.Store, func()) {
			s, sh := storeBehind(t, 1)
			return s, func() { sh.DropNextReplies(1) }
		},
	}
	leasetest.Run(t, h)
	leasetest.RunAdmin(t, h)
	registrytest.Run(t, leasetest.RegistryHarness(h))
}
