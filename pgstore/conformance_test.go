package pgstore_test

import (
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
	"github.com/snowfence/snowfence/pgstore"
)

// TestConformance runs the lease-store conformance suites (the fence
// contract's, the operator's actions', the registry copy's) against a real
// PostgreSQL, each check in a table of its own. Expiry is the claimer's
// clock against lease_expiry, so the harness needs no Expire hook. Its
// Rollback writes the table's rows back from a copy on the same server
// (copyAside).
func TestConformance(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 16)
	h := leasetest.Harness{
		New: func(t *testing.T) lease.Store { return openStore(t, pool, newTable(t, pool)) },
		Reopen: func(t *testing.T, s lease.Store) lease.Store {
			return openStore(t, pool, s.(*pgstore.Store).Table())
		},
		ClockExpiry: true,
		Rollback: func(t *testing.T, s lease.Store) func() {
			return copyAside(t, pool, s.(*pgstore.Store).Table())
		},
		// Behind a proxy that drops the answer to the next statement
		// after the server committed it.
		LoseReply: func(t *testing.T) (lease.Store, func()) {
			s, _, arm := cutStore(t, newTable(t, pool))
			arm.sql = "" // the next statement, whichever
			return s, func() { arm.mode.Store(cutResponse) }
		},
	}
	leasetest.Run(t, h)
	leasetest.RunAdmin(t, h)
	registrytest.Run(t, leasetest.RegistryHarness(h))
}
