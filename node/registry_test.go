package node_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/node"
)

// Issue 25: node.Start read no region registry, so a Go service starting a
// holder through it skipped every rule serve checked — the region's home
// store, retired and unknown regions, the registry's schedule — and two
// holders minted the same IDs. These tests start holders through
// node.Start on two stores, A and B, each one region's.

// fleetSchedule is v1,v2 with the cutover at now+d (whole seconds).
func fleetSchedule(d time.Duration) string {
	return "v1,v2@" + time.Now().Add(d).UTC().Truncate(time.Second).Format(time.RFC3339)
}

// connect connects an etcd store of region 0 to endpoints, for setting up
// what the holders find there.
func connect(t *testing.T, endpoints []string) *etcdstore.Store {
	t.Helper()
	s, err := etcdstore.Connect(context.Background(), etcdstore.ClientConfig{Endpoints: endpoints}, etcdstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// setRecord sets st's fleet schedule record to text.
func setRecord(t *testing.T, st lease.Admin, text string) {
	t.Helper()
	cur, err := st.FleetSchedule(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetFleetSchedule(context.Background(), cur.Version, text); err != nil {
		t.Fatal(err)
	}
}

// addRegion adds region name at home to the registry in cs, recording
// sched when it records no schedule yet.
func addRegion(t *testing.T, cs []registry.Copy, name, home, sched string) {
	t.Helper()
	if _, err := registry.Update(context.Background(), cs, func(r registry.Registry) (registry.Registry, error) {
		next, _, err := r.WithRegionHome(name, home, 1, 8)
		if next.Schedule == "" {
			next.Schedule = sched
		}
		return next, err
	}); err != nil {
		t.Fatalf("add region %s: %v", name, err)
	}
}

// regionNode is a node configuration of region on schedule sched, leasing
// machine 0, opened by open.
func regionNode(t *testing.T, open node.Opener, region int, sched string) node.Config {
	t.Helper()
	s, err := snowfence.ParseSchedule(sched)
	if err != nil {
		t.Fatal(err)
	}
	cfg := noStore(lease.Range{Lo: 0, Hi: 0})
	cfg.Open, cfg.Keeper.Region, cfg.Generator.Schedule = open, region, s
	return cfg
}

// Path 1 through node.Start: store A an embedded etcd, store B an etcd
// cluster, both on v1,v2@T with T past; region a (0) at home in A, region
// b (1) in B, region c (2) retired. Region b's holder starts on B; on A
// (the embedded etcd) region b is refused, and so are region c and region
// 5, which the registry does not have — before any claim.
func TestStartRefusesRegionOffItsHome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sched := fleetSchedule(-time.Hour)
	srv, err := embedetcd.Start(ctx, embedetcd.Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cb := etcdtest.Start(t, 1)
	a, b := connect(t, srv.Endpoints()), connect(t, cb.Endpoints())
	setRecord(t, a, sched)
	setRecord(t, b, sched)
	cs := []registry.Copy{{Name: "copy-a", Store: a}, {Name: "copy-b", Store: b}}
	addRegion(t, cs, "a", "copy-a", sched)
	addRegion(t, cs, "b", "copy-b", sched)
	addRegion(t, cs, "c", "copy-a", sched)
	if _, err := registry.RetireRegion(ctx, cs, "c", 2); err != nil {
		t.Fatal(err)
	}

	home, err := node.Start(ctx, regionNode(t, node.EtcdCluster(etcdstore.ClientConfig{Endpoints: cb.Endpoints()}, etcdstore.Config{}), 1, sched))
	if err != nil {
		t.Fatalf("region b's holder on its home store B: %v", err)
	}
	defer home.Close(ctx)
	for _, c := range []struct {
		region int
		want   error
	}{{1, registry.ErrWrongHome}, {2, registry.ErrRegionRetired}, {5, registry.ErrUnknownRegion}} {
		onA := node.EtcdCluster(etcdstore.ClientConfig{Endpoints: srv.Endpoints()}, etcdstore.Config{})
		n, err := node.Start(ctx, regionNode(t, onA, c.region, sched))
		if err == nil {
			n.Close(ctx)
			t.Errorf("node.Start of region %d on A (the embedded etcd): started on %+v (region b's holder on B: %+v); want %v",
				c.region, n.Keeper.Status(), home.Keeper.Status(), c.want)
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("node.Start of region %d on A: %v; want %v", c.region, err, c.want)
		}
	}
	// The embedded etcd opened by the node itself (OnEmbedded: the node
	// takes it over, and stops it on the refusal).
	if n, err := node.Start(ctx, regionNode(t, node.OnEmbedded(srv, etcdstore.Config{}), 1, sched)); err == nil {
		n.Close(ctx)
		t.Errorf("node.Start of region 1 on the embedded etcd A, opened by the node: started; want ErrWrongHome")
	} else if !errors.Is(err, registry.ErrWrongHome) {
		t.Errorf("node.Start of region 1 on the embedded etcd A, opened by the node: %v; want ErrWrongHome", err)
	}
}

// Path 2 through node.Start: store A on v1,v2@T (T = now + 2 h), store B
// on v1,v2@T2 (T2 = now − 1 h), set each alone; the registry created on A
// records A's schedule and, written by hand, B joined it and region b (1)
// was added at home in B. A holder of region b on B with B's own schedule
// is refused, naming the command that makes B's record the registry's.
func TestStartRefusesStoreScheduleOffRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	future, past := fleetSchedule(2*time.Hour), fleetSchedule(-time.Hour)
	ca, cb := etcdtest.Start(t, 1), etcdtest.Start(t, 1)
	a, b := connect(t, ca.Endpoints()), connect(t, cb.Endpoints())
	setRecord(t, a, future)
	setRecord(t, b, past)
	addRegion(t, []registry.Copy{{Name: "copy-a", Store: a}}, "a", "copy-a", future)
	reg, err := a.Registry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bID, err := b.RegistryIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reg.Version++
	reg.Copies, reg.CopyIdentities = append(slices.Clone(reg.Copies), "copy-b"), append(slices.Clone(reg.CopyIdentities), bID)
	if err := a.SetRegistry(ctx, reg); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateRegistry(ctx, reg); err != nil {
		t.Fatal(err)
	}
	addRegion(t, []registry.Copy{{Name: "copy-a", Store: a}, {Name: "copy-b", Store: b}}, "b", "copy-b", future)

	n, err := node.Start(ctx, regionNode(t, node.EtcdCluster(etcdstore.ClientConfig{Endpoints: cb.Endpoints()}, etcdstore.Config{}), 1, past))
	if err == nil {
		n.Close(ctx)
		t.Fatalf("node.Start of region b on B with B's record %s, the registry recording %s: started on %+v; want ErrSchedule", past, future, n.Keeper.Status())
	}
	if !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), "snowfence schedule set '"+future+"'") {
		t.Fatalf("node.Start of region b on B: %v; want ErrSchedule naming snowfence schedule set '%s'", err, future)
	}
}
