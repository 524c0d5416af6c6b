package pgstore_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/pgstore"
)

// TestKeyspaceRows: a sibling's rows carry region = index, and it is
// checked as New checks a region: the region column is an integer, so
// above math.MaxInt32 is ErrInvalid like a negative index.
func TestKeyspaceRows(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s := openStore(t, pool, table)
	idx, _ := lease.KeyspaceOf(1, 0)
	sib, err := s.Keyspace(idx)
	if err != nil {
		t.Fatalf("Keyspace(%d): %v", idx, err)
	}
	defer sib.Close()
	leasetest.MustClaim(t, sib, lease.ClaimRequest{Holder: "a", Range: lease.Range{Lo: 4, Hi: 4}, NowMs: time.Now().UnixMilli(),
		LeaseFor: 10 * time.Second, MaxAhead: time.Hour})
	rows, _ := pool.Query(t.Context(), "SELECT region FROM "+pgx.Identifier{table}.Sanitize()+" WHERE machine_id = 4")
	regions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil || len(regions) != 1 || regions[0] != idx {
		t.Errorf("rows of machine 4: regions %v, %v; want one, region %d", regions, err, idx)
	}
	for _, bad := range []int{-1, math.MaxInt32 + 1} {
		if _, err := s.Keyspace(bad); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("Keyspace(%d): %v, want ErrInvalid", bad, err)
		}
		if _, err := pgstore.New(pool, pgstore.Config{Table: table, Region: bad}); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("New with region %d: %v, want ErrInvalid, as Keyspace", bad, err)
		}
	}
	top, err := s.AdminKeyspace(math.MaxInt32)
	if err != nil {
		t.Fatalf("AdminKeyspace(MaxInt32): %v", err)
	}
	defer top.Close()
	if _, err := top.List(t.Context()); err != nil {
		t.Errorf("List of keyspace MaxInt32: %v", err)
	}
}

// TestKeyspaceOfConnectedStore: a sibling of a store that owns its pool
// (Connect) leaves the pool open when closed.
func TestKeyspaceOfConnectedStore(t *testing.T) {
	t.Parallel()
	table := newTable(t, testPool(t, 2))
	s, err := pgstore.Connect(t.Context(), testURL(t), pgstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	sib, err := s.Keyspace(lease.KeyspaceStride)
	if err != nil {
		t.Fatal(err)
	}
	r := lease.ClaimRequest{Holder: "a", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: time.Now().UnixMilli(), LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
	leasetest.MustClaim(t, sib, r)
	if err := sib.Close(); err != nil {
		t.Fatalf("sibling's Close: %v", err)
	}
	leasetest.MustClaim(t, s, r)
}

// TestKeyspaceNoticesRestore: a sibling reads the server's identity as
// its store does (the same statement, the same origin row): after a
// failover its own leases are refused, and a claim through the store
// fences them and floors the sibling's claims too.
func TestKeyspaceNoticesRestore(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	ident, set := fakeIdentity(t, pool, table)
	s := openFake(t, pool, table, ident)
	sib, err := s.Keyspace(lease.KeyspaceStride)
	if err != nil {
		t.Fatal(err)
	}
	defer sib.Close()
	nowMs := time.Now().UnixMilli()
	req := func(holder string, at int64) lease.ClaimRequest {
		return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 1, Hi: 1}, NowMs: at, LeaseFor: 10 * time.Second,
			MaxAhead: time.Hour, RestoreWindow: 30 * time.Second}
	}
	a := leasetest.MustClaim(t, s, req("a", nowMs))
	b := leasetest.MustClaim(t, sib, req("b", nowMs))
	if _, err := sib.Extend(t.Context(), b, nowMs+10000, 10*time.Second); err != nil {
		t.Fatalf("sibling's Extend before the failover: %v", err)
	}
	set("7000000000000000001", 2)
	if _, err := sib.Extend(t.Context(), b, nowMs+11000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("sibling's Extend on the new timeline: %v, want ErrRestored", err)
	}
	notice := nowMs + 1000
	c := leasetest.MustClaim(t, s, lease.ClaimRequest{Holder: "c", Range: lease.Range{Lo: 2, Hi: 2}, NowMs: notice,
		LeaseFor: 10 * time.Second, MaxAhead: time.Hour, RestoreWindow: 30 * time.Second})
	if c.StartMs < notice+30000 {
		t.Errorf("first claim after the failover starts at %d, want ≥ %d", c.StartMs, notice+30000)
	}
	if rec := leasetest.MustGet(t, sib, 1); rec.Held() {
		t.Errorf("sibling's number 1 after the failover was recorded: %+v, want no holder", rec)
	}
	if _, err := s.Extend(t.Context(), a, nowMs+12000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("store's Extend after the failover was recorded: %v, want ErrRestored", err)
	}
	if l := leasetest.MustClaim(t, sib, req("d", notice+500)); l.StartMs < notice+30000 {
		t.Errorf("sibling's claim after the failover starts at %d, want ≥ the floor %d", l.StartMs, notice+30000)
	}
}
