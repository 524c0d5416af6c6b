package lease_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// fenceOnly is the usual wrapper around a lease store, a struct embedding
// lease.Store: its method set is the fence contract and nothing more (no
// List, no journal, no registry methods), whatever the store
// underneath has.
type fenceOnly struct{ lease.Store }

// A keeper needs nothing of its store but the fence contract: two keepers
// on a store that implements only lease.Store claim two numbers and mint
// IDs none of which the other mints.
func TestKeeperOnFenceContractOnly(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := fenceOnly{newStore(t, c.Endpoints())}
	if _, ok := any(st).(lease.Admin); ok {
		t.Fatal("fenceOnly implements lease.Admin; the test needs a store with only the fence contract")
	}
	if _, ok := any(st).(registry.Reader); ok {
		t.Fatal("fenceOnly implements registry.Reader; the test needs a store with only the fence contract")
	}
	// A clock each: on one shared clock, b's wait for its notice window
	// stepped time on while a's keeper was between sleeps, and a, not
	// renewed, was fenced (renewal-overdue) at its first mint.
	a := mustHolder(t, st, fakeclock.New(t0), "a", lease.Range{Lo: 0, Hi: 1})
	b := mustHolder(t, st, fakeclock.New(t0), "b", lease.Range{Lo: 0, Hi: 1})
	if la, lb := a.k.Lease(), b.k.Lease(); la == nil || lb == nil || la.Machine == lb.Machine {
		t.Fatalf("keepers on the fence-only store hold %v and %v; want two numbers", la, lb)
	}
	seen := map[snowfence.ID]string{}
	for round := range 3 {
		for _, h := range []*holder{a, b} {
			for _, id := range h.mint(50) {
				if other, dup := seen[id]; dup {
					t.Fatalf("round %d: ID %d minted twice (by %s and by %s)", round, id, other, h.k.Lease().Holder)
				}
				seen[id] = h.k.Lease().Holder
			}
		}
		a.issuing()
		b.issuing()
	}
}

// The region registry's rules reach a keeper through the fence contract
// (Store.RegistryReader), so the usual wrapper, which hides every method
// but lease.Store's, does not hide them: a holder of region b started on
// a wrapper around store A, not region b's home, is refused with
// ErrWrongHome as one on A itself is. A keeper that looked for the
// registry with a type assertion (st.(registry.Reader)) would find none
// on the wrapper, take the fleet to be one region, and start.
func TestKeeperRegionRulesThroughWrapper(t *testing.T) {
	ca, cb := etcdtest.Start(t, 1), etcdtest.Start(t, 1)
	a0, b0 := regionStore(t, ca.Endpoints(), 0), regionStore(t, cb.Endpoints(), 0)
	setFleet(t, a0, schedPast)
	setFleet(t, b0, schedPast)
	cs := []registry.Copy{{Name: "copy-a", Store: a0}, {Name: "copy-b", Store: b0}}
	addHomed(t, cs, "a", "copy-a", schedPast)
	addHomed(t, cs, "b", "copy-b", schedPast)

	wrapped := fenceOnly{regionStore(t, ca.Endpoints(), 1)}
	k, err := regionKeeper(t, wrapped, "intruder", 1, schedPast, lease.Range{Lo: 0, Hi: 0})
	if err == nil {
		t.Fatalf("StartKeeper of region b on a wrapper around store A started, holding %v; want ErrWrongHome (region b leases from copy-b)", k.Lease())
	}
	if !errors.Is(err, registry.ErrWrongHome) || !strings.Contains(err.Error(), "leases from copy copy-b") {
		t.Fatalf("StartKeeper of region b on a wrapper around store A: %v; want ErrWrongHome saying it leases from copy copy-b", err)
	}
}

// A store's region reaches the keeper through the fence contract
// (Store.Region) too: a keeper of region 1 on the usual wrapper around a
// store of region 0's keyspace is refused, as on the store itself. Were
// Region an optional method the keeper looked for, the wrapper would hide
// it and the keeper would mint region 1's IDs on numbers leased in region
// 0's keyspace, where region 1's own holders never look.
func TestKeeperRegionOfWrappedStoreChecked(t *testing.T) {
	c := etcdtest.Start(t, 1)
	base := regionStore(t, c.Endpoints(), 0)
	setFleet(t, base, schedPast)
	k, err := regionKeeper(t, fenceOnly{base}, "other-region", 1, schedPast, lease.Range{Lo: 0, Hi: 0})
	if err == nil {
		t.Fatalf("StartKeeper of region 1 on a wrapper around region 0's store started, holding %v; want ErrInvalid", k.Lease())
	}
	if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "differs from the store's region 0") {
		t.Fatalf("StartKeeper of region 1 on a wrapper around region 0's store: %v; want ErrInvalid naming the store's region", err)
	}
}
