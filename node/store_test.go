package node_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
)

// claimStore records the lease length of every claim, its siblings'
// (Keyspace) into the claimStore they were opened from (their root).
type claimStore struct {
	lease.Store
	root     *claimStore // nil: records into itself
	mu       sync.Mutex
	leaseFor []time.Duration
}

func (s *claimStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	r := s.base()
	r.mu.Lock()
	r.leaseFor = append(r.leaseFor, req.LeaseFor)
	r.mu.Unlock()
	return s.Store.Claim(ctx, req)
}

// base returns the claimStore s records into.
func (s *claimStore) base() *claimStore {
	if s.root != nil {
		return s.root
	}
	return s
}

// Keyspace wraps the real store's sibling, recording into s's root.
func (s *claimStore) Keyspace(index int) (lease.Store, error) {
	sib, err := s.Store.Keyspace(index)
	if err != nil {
		return nil, err
	}
	return &claimStore{Store: sib, root: s.base()}, nil
}

// An Opener's timings fill the keeper's zero timings; the ones the keeper
// sets stay; with TimingsChosen a zero stays the keeper's own default (10 s).
func TestStartAppliesTheStoresTimings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// (A self-fence etcd admits: its notice window within etcd's
	// MaxNoticeWindow.)
	timings := lease.Timings{LeaseFor: 30 * time.Second, RenewEvery: 3 * time.Second, SelfFence: 6 * time.Second}
	for _, tc := range []struct {
		name     string
		leaseFor time.Duration // the keeper's own
		chosen   bool
		want     time.Duration
	}{
		{"keeper sets none", 0, false, 30 * time.Second},
		{"keeper sets its own", 20 * time.Second, false, 20 * time.Second},
		{"timings chosen", 0, true, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits out its claim's notice window
			var rec *claimStore
			inner := node.EmbeddedEtcd(embedetcd.Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"}, etcdstore.Config{})
			cfg := noStore(lease.Range{Lo: 3, Hi: 3})
			cfg.Keeper.LeaseFor = tc.leaseFor
			cfg.TimingsChosen = tc.chosen
			cfg.Open = func(ctx context.Context, region int, log *slog.Logger) (*node.Opened, error) {
				o, err := inner(ctx, region, log)
				if err != nil {
					return nil, err
				}
				rec = &claimStore{Store: o.Store}
				o.Store, o.Timings = rec, timings
				return o, nil
			}
			n, err := node.Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close(ctx)
			rec.mu.Lock()
			got := rec.leaseFor
			rec.mu.Unlock()
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("claims with lease lengths %v, want one of %s", got, tc.want)
			}
		})
	}
}

// A store configured for another region than the keeper's is refused
// before anything starts: the embedded etcd's data directory stays free.
func TestStartRefusesAStoreOfAnotherRegion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	server := embedetcd.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"}
	cfg := noStore(lease.Range{Lo: 3, Hi: 3})
	cfg.Open = node.EmbeddedEtcd(server, etcdstore.Config{Region: 2})
	if _, err := node.Start(ctx, cfg); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("etcd store of region 2 for a keeper of region 0: %v, want ErrInvalid", err)
	}
	srv, err := embedetcd.Start(ctx, server)
	if err != nil {
		t.Fatalf("the refused node left the data directory in use: %v", err)
	}
	srv.Close()
}
