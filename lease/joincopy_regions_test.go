package lease_test

import (
	"context"
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// TestJoinedCopyWithAnotherRegionsLeasesIsRefused: regions add refuses a
// number another copy holds lease records of (checkNumberUnusedElsewhere),
// but only among the copies named at the add. A store that joins later
// (snowfence regions add-copy, JoinRegistry) is not read: its holders that
// ran as region 0 before it held a registry (unchecked, the default) keep
// leasing there beside region 0's holders on its home, and keepers check
// the registry only at start. The sequence: registry created on copy-1
// with region east (0) homed there; copy-2, whose pre-registry holders
// hold region 0 leases, joins; a region west is homed on copy-2.
func TestJoinedCopyWithAnotherRegionsLeasesIsRefused(t *testing.T) {
	ctx := context.Background()
	cs, _ := fleetCopies(1)
	g, err := lease.AddRegionNumber(ctx, cs, "east", "copy-1", registry.AnyNumber, true, 1, 8)
	if err != nil || g.Number != 0 {
		t.Fatalf("east: %+v, %v", g, err)
	}
	joining := lease.FleetCopy{Name: "copy-2", Store: newFleetStore()}
	joining.Store.(*fleetStore).recs = map[int][]lease.Record{0: {{Machine: 7, Holder: "pre-registry holder", ExpiresMs: 1 << 50}}}
	if _, err := lease.JoinRegistry(ctx, cs, joining); err != nil {
		t.Logf("join refused: %v (no hole)", err)
		return
	}
	all := append(cs, joining)
	w, err := lease.AddRegionNumber(ctx, all, "west", "copy-2", registry.AnyNumber, false, 2, 8)
	t.Errorf("copy-2 joined the registry while it holds region 0's leases (machine 7, a holder that ran as region 0 before it had a registry); "+
		"region 0 (east) is homed on copy-1; add west homed on copy-2: %+v, %v. Holders on copy-1 (east, region 0) and the running one on copy-2 "+
		"both mint region 0 IDs", w, err)
}
