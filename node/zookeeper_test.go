package node_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/zkstore"
)

// A ZooKeeper Opener refuses, before it connects, what would point a holder
// at no ensemble or at another region's leases.
func TestZooKeeperRefusesConfig(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		servers []string
		timeout time.Duration
		store   zkstore.Config
	}{
		"no servers":       {nil, 0, zkstore.Config{}},
		"blank server":     {[]string{"127.0.0.1:2181", " "}, 0, zkstore.Config{}},
		"two in one":       {[]string{"127.0.0.1:2181,127.0.0.1:2182"}, 0, zkstore.Config{}},
		"negative timeout": {[]string{"127.0.0.1:2181"}, -time.Second, zkstore.Config{}},
		"another region":   {[]string{"127.0.0.1:2181"}, 0, zkstore.Config{Region: 2}},
		"relative path":    {[]string{"127.0.0.1:2181"}, 0, zkstore.Config{Path: "snowfence"}},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := node.ZooKeeper(tc.servers, tc.timeout, tc.store)(context.Background(), 0, slog.New(slog.DiscardHandler))
			if !errors.Is(err, lease.ErrInvalid) {
				if o != nil {
					o.Store.Close()
				}
				t.Fatalf("got %v, want lease.ErrInvalid", err)
			}
		})
	}
}

// A node on node.ZooKeeper claims a number from a real ZooKeeper server
// with the tables' timings (the ones the test gives stay its own), mints
// on it, releases it at Close, and the next node on the number mints
// above what the first issued.
func TestZooKeeperMints(t *testing.T) {
	testenv.ZooKeeperLater(t)
	t.Parallel()
	ctx := context.Background()
	e := zktest.Start(t, 1)
	// A test fleet's bound: a claim waits a notice window of seconds, not
	// the tables' 4 min 40 s.
	store := zkstore.Config{Path: "/node-test", TestBound: testbound.Of(2 * time.Second)}
	keeper := lease.KeeperConfig{Range: &lease.Range{Lo: 5, Hi: 5},
		LeaseFor: 3 * time.Second, RenewEvery: 500 * time.Millisecond, SelfFence: 2 * time.Second, Margin: 500 * time.Millisecond}
	start := func() (*node.Node, *node.Opened) {
		t.Helper()
		var opened *node.Opened
		open := node.ZooKeeper(e.Servers(), 4*time.Second, store)
		n, err := node.Start(ctx, node.Config{
			Open: func(ctx context.Context, region int, log *slog.Logger) (*node.Opened, error) {
				o, err := open(ctx, region, log)
				opened = o
				return o, err
			},
			Keeper:    keeper,
			Generator: snowfence.Config{ClockPolicy: snowfence.ClockOff},
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, opened
	}
	n, o := start()
	if _, ok := o.Store.(*zkstore.Store); !ok {
		t.Errorf("store %T, want *zkstore.Store", o.Store)
	}
	if o.Timings != zkstore.Timings() {
		t.Errorf("timings %+v, want zkstore.Timings() %+v", o.Timings, zkstore.Timings())
	}
	first, err := n.Generator.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := snowfence.Decode(first); d.Machine != 5 {
		t.Errorf("ID %d on machine %d, want 5", first, d.Machine)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	n2, _ := start()
	defer n2.Close(ctx)
	next, err := n2.Generator.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next <= first {
		t.Errorf("the next holder of 5 minted %d, not above the first's %d", next, first)
	}
}
