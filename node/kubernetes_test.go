package node_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
)

// A Kubernetes Opener refuses, before it sends a request, what would point
// a holder at no API server, no namespace, or another region's leases.
func TestKubernetesRefusesConfig(t *testing.T) {
	t.Parallel()
	rc := &rest.Config{Host: "https://127.0.0.1:1"} // never reached: every case is refused first
	for name, tc := range map[string]struct {
		store k8sstore.Config
		rc    *rest.Config
	}{
		"no rest.Config":   {k8sstore.Config{Namespace: "ids"}, nil},
		"no namespace":     {k8sstore.Config{}, rc},
		"bad namespace":    {k8sstore.Config{Namespace: "Ids"}, rc},
		"bad prefix":       {k8sstore.Config{Namespace: "ids", Prefix: "snow_fence"}, rc},
		"long prefix":      {k8sstore.Config{Namespace: "ids", Prefix: "p23456789012345678901234567890123456789012"}, rc},
		"another region":   {k8sstore.Config{Namespace: "ids", Region: 2}, rc},
		"negative timeout": {k8sstore.Config{Namespace: "ids", RequestTimeout: -time.Second}, rc},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := node.Kubernetes(tc.store, tc.rc)(context.Background(), 0, slog.New(slog.DiscardHandler))
			if !errors.Is(err, lease.ErrInvalid) {
				if o != nil {
					o.Store.Close()
				}
				t.Fatalf("got %v, want lease.ErrInvalid", err)
			}
		})
	}
}

// A node on node.Kubernetes claims a number from a real kube-apiserver,
// through a service account granted only get, list, create and patch on
// leases in its namespace, with the tables' timings (the ones the test
// gives stay its own), mints on it, releases it at Close, and the next
// node on the number mints above what the first issued.
func TestKubernetesMints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A server of the test's own: its cleanup kills the API server, which
	// ends client-go's idle connections before TestMain's leak check.
	s := k8stest.Start(t)
	ns := s.Namespace(t)
	rc := s.Restricted(t, ns)
	// A test fleet's bound: a claim waits a notice window of seconds, not
	// the tables' 4 min 40 s.
	store := k8sstore.Config{Namespace: ns, Prefix: "node-test", TestBound: testbound.Of(2 * time.Second)}
	keeper := lease.KeeperConfig{Range: &lease.Range{Lo: 5, Hi: 5},
		LeaseFor: 3 * time.Second, RenewEvery: 500 * time.Millisecond, SelfFence: 2 * time.Second, Margin: 500 * time.Millisecond}
	start := func() (*node.Node, *node.Opened) {
		t.Helper()
		var opened *node.Opened
		open := node.Kubernetes(store, rc)
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
	if ks, ok := o.Store.(*k8sstore.Store); !ok || ks.Namespace() != ns || ks.Prefix() != "node-test" {
		t.Errorf("store %T %+v, want a *k8sstore.Store in namespace %s, prefix node-test", o.Store, o.Store, ns)
	}
	if o.Timings != k8sstore.Timings() {
		t.Errorf("timings %+v, want k8sstore.Timings() %+v", o.Timings, k8sstore.Timings())
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
