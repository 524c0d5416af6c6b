package zkstore_test

import (
	"testing"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
	"github.com/snowfence/snowfence/zkstore"
)

// harness is the conformance harness on e: each check on a path of its
// own. Expiry is the claimer's clock against the record's mark, so it needs
// no Expire hook. Its Rollback writes the znodes under the store's path
// back from a copy (copyAside); its LoseReply puts the store behind a
// client that loses the reply of a write that committed.
func harness(e *zktest.Ensemble) leasetest.Harness {
	return leasetest.Harness{
		New: func(t *testing.T) lease.Store { return open(t, e, newPath(t)) },
		Reopen: func(t *testing.T, s lease.Store) lease.Store {
			return open(t, e, s.(*zkstore.Store).Path())
		},
		ClockExpiry: true,
		Rollback: func(t *testing.T, s lease.Store) func() {
			return copyAside(t, e, s.(*zkstore.Store).Path())
		},
		LoseReply: func(t *testing.T) (lease.Store, func()) {
			s, lose, err := zkstore.NewLossy(dial(t, e), zkstore.Config{Path: newPath(t)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, lose
		},
	}
}

// TestConformance runs the suites every lease store passes — the fence
// contract's (leasetest.Run), the operator's actions' (leasetest.RunAdmin)
// and the registry copy's (registrytest.Run) — against one ZooKeeper
// server.
func TestConformance(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	h := harness(zktest.Start(t, 1))
	leasetest.Run(t, h)
	leasetest.RunAdmin(t, h)
	registrytest.Run(t, leasetest.RegistryHarness(h))
}

// TestConformanceEnsemble runs the fence contract's and the operator's
// actions' checks against an ensemble of three, whose sessions may read
// from followers: every read that decides a write follows a sync.
func TestConformanceEnsemble(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	h := harness(zktest.Start(t, 3))
	leasetest.Run(t, h)
	leasetest.RunAdmin(t, h)
}
