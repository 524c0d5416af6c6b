package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// regionStore connects a store of one region under the test's prefix: the
// stores of two regions share the prefix and lease numbers 0..n each.
func regionStore(t *testing.T, endpoints []string, region int) *etcdstore.Store {
	t.Helper()
	s, err := etcdstore.Connect(testCtx(t), etcdstore.ClientConfig{Endpoints: endpoints},
		etcdstore.Config{Prefix: "/test/" + t.Name(), Region: region, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Path 1 of issue 10: two holders of regions 1 and 2 on one etcd, range
// 5-5, under the default schedule v1, which has no region bits. Each
// region's store leases its own machine 5, so both held it, and the
// generator wrote region 0 for both: the same ID from both, every
// millisecond. StartKeeper now refuses a region other than 0 under a layout
// without region bits.
func TestKeeperRefusesRegionUnderRegionlessLayout(t *testing.T) {
	c := etcdtest.Start(t, 1)
	clk := fakeclock.New(t0)
	var ids []snowfence.ID
	var started []string
	for _, region := range []int{1, 2} {
		s := regionStore(t, c.Endpoints(), region)
		k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{
			Store: s, Holder: fmt.Sprintf("h%d", region), Range: &lease.Range{Lo: 5, Hi: 5}, Region: region, Clock: clk})
		if err == nil {
			var g *snowfence.Generator
			t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
			g, gerr := snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
			if gerr != nil {
				t.Fatalf("region %d: the keeper started but New refused it: %v", region, gerr)
			}
			id, gerr := g.Next(context.Background())
			if gerr == nil {
				ids = append(ids, id)
			}
			started = append(started, k.Status().Holder)
			t.Errorf("region %d under v1: StartKeeper succeeded on machine %d, want a refusal", region, k.Status().Machine)
			continue
		}
		var pe *snowfence.PlacementError
		if !errors.Is(err, snowfence.ErrPlacement) || !errors.Is(err, lease.ErrInvalid) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "use region 0 until the cutover") {
			t.Errorf("region %d under v1: %v, want ErrPlacement (and ErrInvalid) saying to use region 0 until a cutover", region, err)
		}
		rec, gerr := s.Get(testCtx(t), 5)
		if gerr != nil || rec.Held() {
			t.Errorf("region %d: machine 5 after the refusal: %+v, %v; want it never claimed", region, rec, gerr)
		}
	}
	if len(ids) == 2 && ids[0] == ids[1] {
		t.Errorf("holders %v minted the same ID %d", started, ids[0])
	}
}

// Region 0 under v1 and a regional holder after a cutover to v2 are fine:
// the second mints v2 IDs carrying its region.
func TestKeeperRegionAfterCutover(t *testing.T) {
	c := etcdtest.Start(t, 1)
	sched, err := snowfence.ParseSchedule("v1,v2@2026-11-29T00:00:00Z") // before t0
	if err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New(t0)
	s := regionStore(t, c.Endpoints(), 3)
	if _, err := s.SetFleetSchedule(testCtx(t), 0, sched.String()); err != nil {
		t.Fatalf("set the fleet schedule: %v", err)
	}
	k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{
		Store: s, Holder: "r3", Range: &lease.Range{Lo: 5, Hi: 5}, Region: 3, Clock: clk, Schedule: sched})
	if err != nil {
		t.Fatal(err)
	}
	var g *snowfence.Generator
	t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
	g, err = snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	h := &holder{t: t, k: k, g: g, clk: clk}
	h.settle()
	h.issuing() // the claim's notice window
	id, err := g.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := sched.Decode(id); d.Layout != "v2" || d.RegionNumber != 3 || d.Machine != 5 {
		t.Fatalf("ID %d decodes to %+v, want v2, region 3, machine 5", id, d)
	}
}
