package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/pgstore"
)

// TestRegistryTable: the region registry is one row of <table>_region,
// created by Migrate and read by the stores of every region of the table;
// a row that does not hold a registry is an error that says what to do,
// never an empty registry, and no change goes over it.
func TestRegistryTable(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	r0 := openStore(t, pool, table)
	r1, err := pgstore.New(pool, pgstore.Config{Table: table, Region: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The two regions' stores are one copy (one identity): named as two,
	// they are refused.
	if _, err := registry.AddRegion(t.Context(), []registry.Copy{{Name: "copy-r0", Store: r0}, {Name: "copy-r1", Store: r1}}, "eu-west-1", time.Now().UnixMilli(), 8); !errors.Is(err, registry.ErrCopyIdentity) {
		t.Fatalf("AddRegion on two regions of one table as two copies = %v; want ErrCopyIdentity", err)
	}
	g, err := registry.AddRegion(t.Context(), []registry.Copy{{Name: "copy-r0", Store: r0}}, "eu-west-1", time.Now().UnixMilli(), 8)
	if err != nil || g.Number != 0 {
		t.Fatalf("AddRegion on region 0 of the table = %+v, %v; want number 0", g, err)
	}
	reg, err := r1.Registry(t.Context())
	if err != nil || reg.Version != 1 || len(reg.Regions) != 1 {
		t.Fatalf("region 1 reads the registry %+v, %v; want version 1 with eu-west-1", reg, err)
	}
	rt := pgx.Identifier{table + "_region"}.Sanitize()
	var version int64
	var body string
	if err := pool.QueryRow(t.Context(), "SELECT version, body::text FROM "+rt).Scan(&version, &body); err != nil || version != 1 {
		t.Fatalf("row of %s: version %d, %v; want 1", rt, version, err)
	}
	t.Logf("%s: version %d, body %s", rt, version, body)

	for _, set := range []string{
		`version = 2`, // the body says 1
		`body = '{}'`,
		`body = '{"version":1,"regions":[{"name":"a","number":0},{"name":"b","number":0}]}'`,
	} {
		if _, err := pool.Exec(t.Context(), "UPDATE "+rt+" SET version = 1, body = $1::jsonb", body); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(t.Context(), "UPDATE "+rt+" SET "+set); err != nil {
			t.Fatal(err)
		}
		reg, err := r0.Registry(t.Context())
		if err == nil || !strings.Contains(err.Error(), "put back") {
			t.Fatalf("Registry after SET %s = %+v, %v; want an error saying what to do", set, reg, err)
		}
		t.Logf("SET %s: %v", set, err)
		if _, err := registry.AddRegion(t.Context(), []registry.Copy{{Name: "copy-r0", Store: r0}}, "us-east-1", time.Now().UnixMilli(), 8); err == nil {
			t.Fatalf("AddRegion over a row after SET %s succeeded; want the read's error", set)
		}
	}
}

// TestTableNameLeavesRoomForRegistry: a table name whose <table>_region
// would pass PostgreSQL's 63 characters is refused.
func TestTableNameLeavesRoomForRegistry(t *testing.T) {
	pool := testPool(t, 1)
	ok := strings.Repeat("a", 63-len("_region"))
	if _, err := pgstore.New(pool, pgstore.Config{Table: ok}); err != nil {
		t.Errorf("table name of %d characters: %v", len(ok), err)
	}
	if _, err := pgstore.New(pool, pgstore.Config{Table: ok + "a"}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("table name of %d characters: %v; want ErrInvalid", len(ok)+1, err)
	}
}

// TestClaimWaitsForRegistryWrite: a registry write in flight — the row
// updated, to record another fleet schedule than the store's record, in a
// transaction not yet committed — holds the claim statement, which reads
// the registry's row FOR SHARE, until it commits; the claim then sees it
// and is refused with lease.ErrSchedule, claiming nothing. A claim reading
// the row from its statement's snapshot would have committed beside the
// write, as if the registry still agreed.
func TestClaimWaitsForRegistryWrite(t *testing.T) {
	t.Parallel()
	const record, recorded = "v1,v2@2036-01-01T00:00:00Z", "v1,v2@2037-01-01T00:00:00Z"
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s := openStore(t, pool, table)
	if _, err := s.SetFleetSchedule(t.Context(), 0, record); err != nil {
		t.Fatal(err)
	}
	agrees := registry.Registry{Version: 1, Regions: []registry.Region{{Name: "a", Number: 0, CreatedMs: 1}}, Schedule: record}
	if err := s.SetRegistry(t.Context(), agrees); err != nil {
		t.Fatal(err)
	}
	differs, err := agrees.WithSchedule(recorded)
	if err != nil {
		t.Fatal(err)
	}
	body, err := registry.Encode(differs)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var pid int
	if err := tx.QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), "UPDATE "+pgx.Identifier{table + "_region"}.Sanitize()+" SET version = 2, body = ($1::text)::jsonb WHERE id = 1", string(body)); err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *lease.Lease
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := s.Claim(t.Context(), lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: time.Now().UnixMilli(),
			LeaseFor: 10 * time.Second, MaxAhead: time.Second, Schedule: record})
		done <- result{l, err}
	}()
	waitBlockedBy(t, pool, pid)
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err == nil || !errors.Is(r.err, lease.ErrSchedule) || !strings.Contains(r.err.Error(), "snowfence schedule set '"+recorded+"'") {
		t.Fatalf("Claim while the registry came to record %s, the record %s: %v, %v; want ErrSchedule naming snowfence schedule set '%s'", recorded, record, r.l, r.err, recorded)
	}
	if rec, err := s.Get(t.Context(), 0); err != nil || rec.Held() {
		t.Errorf("machine 0 after the refused claim: %+v, %v; want it free", rec, err)
	}
}
