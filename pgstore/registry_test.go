package pgstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
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
	if _, err := lease.AddRegion(t.Context(), []lease.RegistryCopy{{Name: "copy-r0", Store: r0}, {Name: "copy-r1", Store: r1}}, "eu-west-1", time.Now().UnixMilli(), 8); !errors.Is(err, lease.ErrCopyIdentity) {
		t.Fatalf("AddRegion on two regions of one table as two copies = %v; want ErrCopyIdentity", err)
	}
	g, err := lease.AddRegion(t.Context(), []lease.RegistryCopy{{Name: "copy-r0", Store: r0}}, "eu-west-1", time.Now().UnixMilli(), 8)
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
		if _, err := lease.AddRegion(t.Context(), []lease.RegistryCopy{{Name: "copy-r0", Store: r0}}, "us-east-1", time.Now().UnixMilli(), 8); err == nil {
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
