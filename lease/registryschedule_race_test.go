package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// These tests each run a sequence of operators' steps (a reviewer's) that
// once ended with holders of two regions minting under two schedules; each
// fails if the sequence gets there again.

// mayStart reports whether a holder on schedule holder may start in the
// region whose store is s: the start check against its store's copy of
// the registry (CheckHolderSchedule, which StartKeeper makes when the
// registry records a schedule) and the store's own claim check
// (CheckSchedule).
func mayStart(t *testing.T, s *fleetStore, holder string) bool {
	t.Helper()
	reg, err := s.Registry(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fleet, _ := s.FleetSchedule(context.Background())
	return lease.CheckHolderSchedule(reg, holder, fleet) == nil && lease.CheckSchedule(holder, fleet) == nil
}

// keepsRunning reports whether a holder on schedule holder, running in
// the region whose store is s, may renew up to a mark past both test
// schedules' cutovers (CheckExtension): it is not stopped.
func keepsRunning(s *fleetStore, holder string) bool {
	fleet, _ := s.FleetSchedule(context.Background())
	return lease.CheckExtension(holder, fleet, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()) == nil
}

// A registry that records no schedule (written before the registry kept
// it, or by registry.AddRegion) and a schedule change that stops after the
// first store: region 1 now starts holders on the new schedule, region 2
// on the old one, and both keep running past the cutover. The documented
// promise ("a change stopped half way leaves one schedule that holders can
// start on") holds only once the registry records a schedule; the first
// ChangeFleetSchedule on such a registry writes the stores before it.
func TestScheduleChangeStoppedHalfWayOnRegistryWithoutSchedule(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cs, ss := fleetCopies(2)
	if _, err := registry.AddRegion(ctx, registryCopiesOf(cs), "a", 1, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := registry.AddRegion(ctx, registryCopiesOf(cs), "b", 1, 8); err != nil {
		t.Fatal(err)
	}
	ss[1].setErr = errStoreDown
	if _, err := lease.ChangeFleetSchedule(ctx, cs, schedFar, now, 0); err == nil {
		t.Fatal("the change with copy 2's store down succeeded")
	}
	// The operator does not run it again (or not yet).
	newInRegion1 := mayStart(t, ss[0], schedFar) && keepsRunning(ss[0], schedFar)
	oldInRegion2 := mayStart(t, ss[1], "v1") && keepsRunning(ss[1], "v1")
	if newInRegion1 && oldInRegion2 {
		t.Fatalf("after a schedule change stopped half way: region 1 starts and keeps holders on %q and region 2 on %q; "+
			"at %s the two regions mint under different layouts", schedFar, "v1", "2099-01-01")
	}
}

// errStoreDown is a store that does not answer.
var errStoreDown = errorString("store down")

type errorString string

func (e errorString) Error() string { return string(e) }

// hookStore is a fleetStore that runs after once, after its first
// successful SetFleetSchedule: another operator's steps, interleaved.
type hookStore struct {
	*fleetStore
	after func()
}

func (h *hookStore) SetFleetSchedule(ctx context.Context, prev int64, text string) (lease.FleetSchedule, error) {
	fs, err := h.fleetStore.SetFleetSchedule(ctx, prev, text)
	if err == nil && h.after != nil {
		f := h.after
		h.after = nil
		f()
	}
	return fs, err
}

// Two operators set two schedules at once; the registry records one of
// them, and every store's record is checked. The documentation says the
// stores' records may then differ and "holders are then refused until one
// schedule set is run again". But a holder started in region 1 between
// the two changes keeps running on its schedule (its store's record is
// still that schedule), while region 2's store record equals the registry,
// so region 2 starts holders on the other schedule: two regions minting
// under two schedules, with no refusal anywhere.
//
// Sequence (copies copy-1, copy-2; registry and stores on v1):
//  1. operator P: schedule set S2 — checks both stores, sets copy-1 to S2;
//  2. operator Q: schedule set S3 — checks, sets copy-1 and copy-2 to S3,
//     registry to S3 on both copies;
//  3. a holder starts in region 1 on S3 (record S3, registry S3);
//  4. operator P continues: sets copy-2 to S2, registry to S2 on both;
//  5. a holder starts in region 2 on S2 (record S2, registry S2).
func TestConcurrentScheduleChangesLeaveOneSchedule(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	base, ss := fleetCopies(2)
	if _, err := registry.Update(ctx, registryCopiesOf(base), func(r registry.Registry) (registry.Registry, error) {
		next, _, err := r.WithRegion("a", 1, 8)
		if err != nil {
			return next, err
		}
		next, _, err = next.WithRegion("b", 1, 8)
		next.Version = r.Version + 1
		next.Schedule = "v1"
		return next, err
	}); err != nil {
		t.Fatal(err)
	}
	h := &hookStore{fleetStore: ss[0]}
	cs := []lease.FleetCopy{{Name: "copy-1", Store: h}, base[1]}
	var started1 bool
	h.after = func() { // step 1 done: copy-1 is at S2
		if _, err := lease.ChangeFleetSchedule(ctx, cs, schedLater, now, 0); err != nil { // step 2
			t.Fatalf("operator Q's change: %v", err)
		}
		started1 = mayStart(t, ss[0], schedLater) // step 3
	}
	if _, err := lease.ChangeFleetSchedule(ctx, cs, schedFar, now, 0); err != nil { // steps 1 and 4
		t.Logf("operator P's change: %v", err)
	}
	started2 := mayStart(t, ss[1], schedFar) // step 5
	running1 := started1 && keepsRunning(ss[0], schedLater)
	running2 := started2 && keepsRunning(ss[1], schedFar)
	r1, _ := ss[0].Registry(ctx)
	r2, _ := ss[1].Registry(ctx)
	t.Logf("records %q, %q; registry %q, %q", ss[0].fleet.Text, ss[1].fleet.Text, r1.Schedule, r2.Schedule)
	if running1 && running2 {
		t.Fatalf("region 1 runs a holder on %q and region 2 one on %q, neither refused nor stopped: from 2099-01-01 they mint under different layouts", schedLater, schedFar)
	}
}
