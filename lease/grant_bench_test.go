package lease_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// BenchmarkMintOnKeeper is the minting loop on a real Keeper (embedded
// etcd, the system clock): with a one-layout schedule, and with a cutover
// ahead, where the keeper holds a number per layout and the generator asks
// GrantAt of the instant on every call. The two in one run give the cost of
// choosing the grant by instant (GrantAt alone, since Next is held to the
// layout's bit budget); NextN(1000) reserves a tick at a time, so it asks
// once per tick.
func BenchmarkMintOnKeeper(b *testing.B) {
	c := etcdtest.Start(b, 1)
	for _, bc := range []struct{ name, sched string }{
		{"one-layout", "v1"},
		{"cutover-ahead", "v1,v2@" + time.Now().Add(30*time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := newBenchStore(b, c.Endpoints())
			if err != nil {
				b.Fatal(err)
			}
			sched, err := snowfence.ParseSchedule(bc.sched)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := s.SetFleetSchedule(ctx, 0, sched.String()); err != nil {
				b.Fatal(err)
			}
			k, err := leasetest.StartKeeper(ctx, lease.KeeperConfig{Store: s, Holder: "bench", Schedule: sched, Lead: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			var g *snowfence.Generator
			defer func() { k.Close(ctx, leasetest.Released(g)) }()
			g, err = snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
			if err != nil {
				b.Fatal(err)
			}
			// The claim's first grant waits out the store's notice
			// window (8 s on etcd) before the first ID.
			for deadline := time.Now().Add(30 * time.Second); ; {
				if _, err := g.Next(ctx); err == nil {
					break
				} else if time.Now().After(deadline) {
					b.Fatalf("not issuing 30 s after the claim: %v", err)
				}
				time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
			}
			b.Run("Next", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := g.Next(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			// Next above runs into v1's 4,096 IDs per ms (244 ns an ID)
			// either way; the grant lookup alone shows what choosing by
			// instant costs.
			b.Run("GrantAt", func(b *testing.B) {
				now := time.Now().UnixMilli()
				b.ReportAllocs()
				for b.Loop() {
					if gr, err := k.GrantAt(now); gr == nil || err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// newBenchStore connects a store under a prefix of the benchmark's own.
func newBenchStore(b *testing.B, endpoints []string) (*etcdstore.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: endpoints},
		etcdstore.Config{Prefix: fmt.Sprintf("/bench/%s/%d", b.Name(), time.Now().UnixNano()), RequestTimeout: 2 * time.Second})
	if err == nil {
		b.Cleanup(func() { s.Close() })
	}
	return s, err
}
