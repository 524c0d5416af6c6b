package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
)

// embedded is a node configuration on an embedded etcd in dir, on free
// loopback ports, leasing from rng.
func embedded(dir string, rng lease.Range) node.Config {
	cfg := noStore(rng)
	cfg.Open = node.EmbeddedEtcd(embedetcd.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"}, etcdstore.Config{})
	return cfg
}

// noStore is a node configuration leasing from rng, with no store chosen.
func noStore(rng lease.Range) node.Config {
	return node.Config{
		Keeper:    lease.KeeperConfig{Range: &rng},
		Generator: snowfence.Config{ClockPolicy: snowfence.ClockOff},
	}
}

func Example() {
	dir, _ := os.MkdirTemp("", "snowfence-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	// node.Config{} alone runs the embedded etcd in ./snowfence-data on
	// 127.0.0.1:2379; here it gets a temporary directory and a free port.
	n, err := node.Start(ctx, node.Config{
		Open:   node.EmbeddedEtcd(embedetcd.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"}, etcdstore.Config{}),
		Keeper: lease.KeeperConfig{Range: &lease.Range{Lo: 37, Hi: 37}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close(ctx)
	id, err := n.Generator.Next(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := snowfence.Decode(id)
	fmt.Println("machine", d.Machine, "created within the last second:", time.Since(d.CreatedAt) < time.Second)
	// Output: machine 37 created within the last second: true
}

// A node restarted on the same data directory gets its number back and
// starts above everything it issued before.
func TestRestartOnSameDataDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	var last snowfence.ID
	for round := range 3 {
		start := time.Now()
		n, err := node.Start(ctx, embedded(dir, lease.Range{Lo: 5, Hi: 5}))
		if err != nil {
			t.Fatal(err)
		}
		ids, err := n.Generator.NextN(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: zero-config start to first batch in %s", round, time.Since(start).Round(time.Millisecond))
		if ids[0] <= last {
			t.Fatalf("round %d: first ID %d not above the previous round's last %d", round, ids[0], last)
		}
		last = ids[len(ids)-1]
		if err := n.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStartFailsCleanly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	a, err := node.Start(ctx, embedded(dir, lease.Range{Lo: 1, Hi: 1}))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	// A second node on the same embedded etcd directory cannot start its
	// own etcd there.
	if _, err := node.Start(ctx, embedded(dir, lease.Range{Lo: 2, Hi: 2})); err == nil {
		t.Fatal("a second embedded etcd on the same directory started")
	}
	// Leasing from the first node's etcd works; the only number in range
	// is taken, so the claim fails with ErrNoFreeNumber and nothing leaks.
	cfg := embedded(dir, lease.Range{Lo: 1, Hi: 1})
	cfg.Open = node.EtcdCluster(etcdstore.ClientConfig{Endpoints: a.Embedded.Endpoints()}, etcdstore.Config{})
	if _, err := node.Start(ctx, cfg); err == nil {
		t.Fatal("claimed a number that is held")
	}
	cfg.Keeper.Range = &lease.Range{Lo: 2, Hi: 2}
	b, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if b.Embedded != nil || b.Keeper.Status().Machine != 2 {
		t.Fatalf("second node: embedded %v, status %+v", b.Embedded, b.Keeper.Status())
	}
}

// A node's keeper feeds the node's generator only: a second generator
// built on Node.Keeper would start at sequence 0 in the tick the first one
// is using, on the same number, and is refused.
func TestNodeKeeperFeedsOnlyItsGenerator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, err := node.Start(ctx, embedded(t.TempDir(), lease.Range{Lo: 423, Hi: 423}))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(ctx)
	if g, err := snowfence.New(snowfence.Config{Lease: n.Keeper, ClockPolicy: snowfence.ClockOff}); !errors.Is(err, snowfence.ErrLeaseBound) {
		t.Fatalf("snowfence.New on Node.Keeper = %v, %v; want ErrLeaseBound", g, err)
	}
}
