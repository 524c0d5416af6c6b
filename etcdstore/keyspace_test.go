package etcdstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestKeyspaceKeys: a sibling's keys are <prefix>/<index>/…, beside the
// store's <prefix>/<region>/…, and it is checked as New checks a region.
func TestKeyspaceKeys(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	s := newStore(t, cli, etcdstore.Config{Region: 3})
	idx, _ := lease.KeyspaceOf(1, 3)
	sib, err := s.Keyspace(idx)
	if err != nil {
		t.Fatalf("Keyspace(%d): %v", idx, err)
	}
	defer sib.Close()
	now := baseMs()
	leasetest.MustClaim(t, sib, req("a", 4, 4, now))
	for key, want := range map[string]int64{
		prefixFor(t) + "/65539/owner/4": 1,
		prefixFor(t) + "/3/owner/4":     0,
	} {
		resp, err := cli.Get(ctxFor(t), key)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count != want {
			t.Errorf("keys at %s: %d, want %d", key, resp.Count, want)
		}
	}
	if _, err := s.Keyspace(-1); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Keyspace(-1): %v, want ErrInvalid", err)
	}
	if _, err := etcdstore.New(cli, etcdstore.Config{Region: -1}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("New with region -1: %v, want ErrInvalid, as Keyspace(-1)", err)
	}
}

// TestKeyspaceOfConnectedStore: a sibling of a store that owns its client
// (Connect) leaves the client open when closed; after the store's Close,
// Keyspace is ErrClosed.
func TestKeyspaceOfConnectedStore(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s, err := etcdstore.Connect(ctxFor(t), etcdstore.ClientConfig{Endpoints: c.Endpoints()}, etcdstore.Config{Prefix: prefixFor(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sib, err := s.Keyspace(lease.KeyspaceStride)
	if err != nil {
		t.Fatalf("Keyspace: %v", err)
	}
	leasetest.MustClaim(t, sib, req("a", 0, 0, baseMs()))
	if err := sib.Close(); err != nil {
		t.Fatalf("sibling's Close: %v", err)
	}
	leasetest.MustClaim(t, s, req("b", 0, 0, baseMs()))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Keyspace(lease.KeyspaceStride); !errors.Is(err, etcdstore.ErrClosed) {
		t.Errorf("Keyspace after Close: %v, want ErrClosed", err)
	}
}

// TestKeyspaceSharesRestoreHistory: etcd's history is the cluster's, so a
// restore the store notices fences the leases its sibling claimed before
// it, and floors the claims of a sibling opened only after the notice,
// which has sent no request that could have shown it the restore.
func TestKeyspaceSharesRestoreHistory(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	clk := fakeclock.New(time.Now().Truncate(time.Millisecond))
	s := newStore(t, c.Client(t), etcdstore.Config{RestoreMargin: time.Minute, Clock: clk})
	before, err := s.Keyspace(lease.KeyspaceStride)
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	now := clk.Now().WallMs
	a := mustExtend(t, s, leasetest.MustClaim(t, s, req("a", 0, 0, now)), now+1000)
	b := mustExtend(t, before, leasetest.MustClaim(t, before, req("b", 0, 0, now)), now+1000)
	snap := c.Snapshot(t)
	for i := range 5 {
		a = mustExtend(t, s, a, now+2000+int64(i))
	}
	c.Restore(t, snap, etcdtest.RestoreOptions{})
	clk.Advance(time.Second)
	noticed := clk.Now().WallMs
	if _, err := s.Extend(ctxFor(t), a, now+3000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("Extend of a lease claimed before the restore: %v, want ErrRestored", err)
	}
	if _, err := before.Extend(ctxFor(t), b, now+3000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("Extend through the sibling of a lease it claimed before the restore: %v, want ErrRestored", err)
	}
	after, err := s.Keyspace(2 * lease.KeyspaceStride)
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	l := leasetest.MustClaim(t, after, req("c", 0, 0, clk.Now().WallMs))
	if floor := noticed + time.Minute.Milliseconds(); l.StartMs < floor {
		t.Errorf("claim through a sibling opened after the restore was noticed starts at %d, want ≥ %d (noticed + RestoreMargin)", l.StartMs, floor)
	}
	mustExtend(t, after, l, l.StartMs+1000)
}
