package lease_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/lease/registry"
)

// Issue 25: the region registry's rules (a region resolved against the
// registry, retired regions refused, the region's home store, the holder's
// schedule against the registry's and the store's) were checked by serve
// alone; a holder started through lease.StartKeeper (or node.Start) read no
// registry, and two holders minted the same IDs. These tests start holders
// through StartKeeper on two etcd clusters, A and B, each one region's
// store.

// regionKeeper starts a keeper of region in store st on schedule sched,
// leasing rng, on a fake clock at t0.
func regionKeeper(t *testing.T, st lease.Store, holder string, region int, sched string, rng lease.Range) (*lease.Keeper, error) {
	t.Helper()
	s, err := snowfence.ParseSchedule(sched)
	if err != nil {
		t.Fatal(err)
	}
	k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{
		Store: st, Holder: holder, Range: &rng, Region: region, Schedule: s, Clock: fakeclock.New(t0)})
	if err == nil {
		t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) }) // no generator
	}
	return k, err
}

// setFleet sets st's fleet schedule record to text (the store's own write:
// the notice rule is not what these tests are about).
func setFleet(t *testing.T, st lease.Admin, text string) {
	t.Helper()
	cur, err := st.FleetSchedule(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetFleetSchedule(testCtx(t), cur.Version, text); err != nil {
		t.Fatal(err)
	}
}

// addHomed adds region name at home to the registry in cs, recording the
// fleet schedule sched if the registry records none yet (as the first
// regions add does).
func addHomed(t *testing.T, cs []registry.Copy, name, home, sched string) registry.Region {
	t.Helper()
	var g registry.Region
	if _, err := registry.Update(testCtx(t), cs, func(r registry.Registry) (registry.Registry, error) {
		next, added, err := r.WithRegionHome(name, home, 1, 8)
		g = added
		if next.Schedule == "" {
			next.Schedule = sched
		}
		return next, err
	}); err != nil {
		t.Fatalf("add region %s at home %s: %v", name, home, err)
	}
	return g
}

// sameIDs mints one ID on each keeper at one instant and reports whether
// they are equal.
func sameIDs(t *testing.T, ks ...*lease.Keeper) bool {
	t.Helper()
	clk := fakeclock.New(t0)
	var ids []snowfence.ID
	for _, k := range ks {
		g, err := snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
		if err != nil {
			t.Fatal(err)
		}
		id, err := g.Next(context.Background())
		if err != nil {
			return false
		}
		ids = append(ids, id)
	}
	return len(ids) == 2 && ids[0] == ids[1]
}

// Path 1: stores A and B, both on v1,v2@T with T past; region a (0) at
// home in A, region b (1) at home in B. A holder of region 1 on A leased
// region 1's machine 0 there while region b's holder on B held it too:
// both minted the same v2 IDs. StartKeeper now refuses a region off its
// home store (through a Keyspace view too), a retired region and a number
// the registry does not have.
func TestKeeperRefusesRegionOffItsHome(t *testing.T) {
	ca, cb := etcdtest.Start(t, 1), etcdtest.Start(t, 1)
	a0, b0 := regionStore(t, ca.Endpoints(), 0), regionStore(t, cb.Endpoints(), 0)
	setFleet(t, a0, schedPast)
	setFleet(t, b0, schedPast)
	cs := []registry.Copy{{Name: "copy-a", Store: a0}, {Name: "copy-b", Store: b0}}
	addHomed(t, cs, "a", "copy-a", schedPast)
	addHomed(t, cs, "b", "copy-b", schedPast)
	addHomed(t, cs, "c", "copy-a", schedPast)
	if _, err := registry.RetireRegion(testCtx(t), cs, "c", 2); err != nil {
		t.Fatal(err)
	}

	a1, b1 := regionStore(t, ca.Endpoints(), 1), regionStore(t, cb.Endpoints(), 1)
	home, err := regionKeeper(t, b1, "b-home", 1, schedPast, lease.Range{Lo: 0, Hi: 0})
	if err != nil {
		t.Fatalf("region b's holder on its home store B: %v", err)
	}
	if l := home.Lease(); l == nil || l.Machine != 0 {
		t.Fatalf("region b's holder on B holds %v; want machine 0", l)
	}
	viewA1, err := a0.Keyspace(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { viewA1.Close() })
	for _, c := range []struct {
		name   string
		st     lease.Store
		region int
		want   error
		says   string
	}{
		{"region b on A", a1, 1, registry.ErrWrongHome, "leases from copy copy-b"},
		{"region b on a Keyspace view of A", viewA1, 1, registry.ErrWrongHome, "leases from copy copy-b"},
		{"region a on B", b0, 0, registry.ErrWrongHome, "leases from copy copy-a"},
		{"retired region c on its home A", regionStore(t, ca.Endpoints(), 2), 2, registry.ErrRegionRetired, "never used again"},
		{"region 5, not in the registry", regionStore(t, ca.Endpoints(), 5), 5, registry.ErrUnknownRegion, "snowfence regions list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := regionKeeper(t, c.st, "intruder", c.region, schedPast, lease.Range{Lo: 0, Hi: 0})
			if err == nil {
				dup := c.region == 1 && sameIDs(t, home, k)
				t.Fatalf("StartKeeper of region %d started, holding %v (region b's holder on B holds %v; the same IDs from both: %v); want %v",
					c.region, k.Lease(), home.Lease(), dup, c.want)
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("StartKeeper of region %d: %v; want %v saying %q", c.region, err, c.want, c.says)
			}
			ks, kerr := c.st.Keyspace(lease.KeyspaceStride + c.region)
			if kerr != nil {
				t.Fatal(kerr)
			}
			defer ks.Close()
			if rec, gerr := ks.Get(testCtx(t), 0); gerr != nil || rec.Held() {
				t.Errorf("region %d's v2 machine 0 in the refused holder's store: %+v, %v; want it never claimed", c.region, rec, gerr)
			}
		})
	}
}

// joinByHand writes, as a caller bypassing JoinRegistry's checks would,
// the registry of cs's stores with joining recorded as one more copy (its
// name sorting after theirs), to every copy and to joining's store.
func joinByHand(t *testing.T, cs []registry.Copy, joining registry.Copy) registry.Registry {
	t.Helper()
	ctx := testCtx(t)
	cur, err := cs[0].Store.Registry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := joining.Store.RegistryIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := cur
	next.Version++
	next.Copies = append(slices.Clone(cur.Copies), joining.Name)
	next.CopyIdentities = append(slices.Clone(cur.CopyIdentities), id)
	for _, c := range cs {
		if err := c.Store.SetRegistry(ctx, next); err != nil {
			t.Fatal(err)
		}
	}
	if err := joining.Store.CreateRegistry(ctx, next); err != nil {
		t.Fatal(err)
	}
	return next
}

// Path 2: store A set alone to v1,v2@T (T = t0 + 2 h), store B earlier to
// v1,v2@T2 (T2 = t0 − 1 h). The registry, created on A, records A's
// schedule; B joined it anyway, and region b (1) was added at home in B.
// A holder of region 1 on B with B's schedule started, because B's own
// record matched it: between T2 and T region b minted v2 IDs while region
// a minted v1, and v1 machine 128 is bit for bit v2 region 1 machine 0.
// Now JoinRegistry refuses B, and when the registry is written by hand
// StartKeeper refuses the holder, and so does the store's claim itself.
func TestKeeperRefusesStoreScheduleOffRegistry(t *testing.T) {
	ca, cb := etcdtest.Start(t, 1), etcdtest.Start(t, 1)
	a0, b0 := regionStore(t, ca.Endpoints(), 0), regionStore(t, cb.Endpoints(), 0)
	setFleet(t, a0, schedFuture)
	setFleet(t, b0, schedPast)
	cs := []registry.Copy{{Name: "copy-a", Store: a0}}
	addHomed(t, cs, "a", "copy-a", schedFuture)
	joining := registry.Copy{Name: "copy-b", Store: b0}
	_, err := lease.JoinRegistry(testCtx(t), []lease.FleetCopy{{Name: "copy-a", Store: a0}}, lease.FleetCopy{Name: "copy-b", Store: b0})
	if !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), "snowfence schedule set '"+schedFuture+"'") {
		t.Errorf("JoinRegistry of B, whose record is %s, to a registry recording %s: %v; want ErrSchedule naming snowfence schedule set '%s'",
			schedPast, schedFuture, err, schedFuture)
	}
	if reg, _ := b0.Registry(testCtx(t)); reg.Version != 0 {
		// Written by the join under test: go on from it.
		t.Logf("B holds the registry at version %d after the join", reg.Version)
	} else {
		joinByHand(t, cs, joining)
	}
	both := append(cs, joining)
	addHomed(t, both, "b", "copy-b", schedFuture)

	b1 := regionStore(t, cb.Endpoints(), 1)
	if k, err := regionKeeper(t, b1, "b-holder", 1, schedPast, lease.Range{Lo: 0, Hi: 0}); err == nil {
		t.Errorf("StartKeeper of region b on B with B's record %s, the registry recording %s: started holding %v; want ErrSchedule", schedPast, schedFuture, k.Lease())
	} else if !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), "snowfence schedule set '"+schedFuture+"'") {
		t.Errorf("StartKeeper of region b on B: %v; want ErrSchedule naming snowfence schedule set '%s'", err, schedFuture)
	}
	// A caller bypassing the keeper: the claim itself refuses.
	v2, err := b1.Keyspace(lease.KeyspaceStride + 1)
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	req := lease.ClaimRequest{Holder: "bypass", Range: lease.Range{Lo: 0, Hi: 1}, NowMs: t0.UnixMilli(), LeaseFor: 10 * time.Second, MaxAhead: 2 * time.Second, Schedule: schedPast}
	if l, err := v2.Claim(testCtx(t), req); err == nil {
		t.Errorf("Claim on B with its record %s and the registry recording %s: %v; want ErrSchedule", schedPast, schedFuture, l)
	} else if !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), "snowfence schedule set '"+schedFuture+"'") {
		t.Errorf("Claim on B: %v; want ErrSchedule naming snowfence schedule set '%s'", err, schedFuture)
	}
}

// A keeper started on a store with no registry (a one-region fleet, and
// says so) keeps its lease when a registry recording another schedule
// than its store's record is written afterwards, but its next claim — after
// losing its number — is refused by the store, not granted another number.
func TestKeeperNextClaimRefusedOnceRegistryDiffers(t *testing.T) {
	c := etcdtest.Start(t, 1)
	b0, b1 := regionStore(t, c.Endpoints(), 0), regionStore(t, c.Endpoints(), 1)
	setFleet(t, b0, schedPast)
	var logs bytes.Buffer
	clk := fakeclock.New(t0)
	sched, err := snowfence.ParseSchedule(schedPast)
	if err != nil {
		t.Fatal(err)
	}
	h := mustHolder(t, b1, clk, "b-holder", lease.Range{Lo: 0, Hi: 1}, func(kc *lease.KeeperConfig) {
		kc.Region, kc.Schedule = 1, sched
		kc.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	if !strings.Contains(logs.String(), "no region registry") {
		t.Errorf("keeper on a store with no registry logged:\n%s\nwant it to say it found no region registry", logs.String())
	}
	held := h.k.Lease()
	reg := registry.Registry{Version: 1, Regions: []registry.Region{{Name: "a", Number: 0, CreatedMs: 1}, {Name: "b", Number: 1, CreatedMs: 1}}, Schedule: schedFuture}
	if err := b0.CreateRegistry(testCtx(t), reg); err != nil {
		t.Fatal(err)
	}
	v2, err := b0.AdminKeyspace(lease.KeyspaceStride + 1)
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	if err := v2.Quarantine(testCtx(t), held.Machine); err != nil {
		t.Fatal(err)
	}
	h.step(2 * time.Second) // a renewal: lost; the claim that follows at once
	st := h.k.Status()
	if st.Claims != 1 || !strings.Contains(st.LastError, lease.ErrSchedule.Error()) {
		t.Fatalf("after losing machine %d with the registry recording %s and the store %s: %+v; want no second claim, ErrSchedule", held.Machine, schedFuture, schedPast, st)
	}
}

// Without a registry a holder's region is its own affair, as before the
// registry: any number starts, and the keeper says it found none.
func TestKeeperWithoutRegistry(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s0, s3 := regionStore(t, c.Endpoints(), 0), regionStore(t, c.Endpoints(), 3)
	setFleet(t, s0, schedPast)
	if _, err := regionKeeper(t, s3, "r3", 3, schedPast, lease.Range{Lo: 0, Hi: 0}); err != nil {
		t.Fatalf("region 3 on a store with no registry: %v", err)
	}
}
