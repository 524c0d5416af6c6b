package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// TestAttackTempTableShadowsFleet: an unqualified table name is looked up
// in each session's search_path, and pg_temp is searched first for
// relations: other code on a shared pool that creates a temporary table
// named like <table>_fleet redirects that session's claims' schedule
// comparison, with no search_path change and no interleaving (a review
// showed a v1 claim taking machine 5 beside a v2 holder of machine 20 after
// a change at once). New's documentation says to name the table with its
// schema on a shared pool; this test holds the store to that advice: with
// "schema.table", the temporary table is not consulted and the v1 claim is
// refused.
func TestAttackTempTableShadowsFleet(t *testing.T) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	admin := openStore(t, pool, table)
	own := testPool(t, 1)
	var schema string
	if err := pool.QueryRow(t.Context(), "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(own, pgstore.Config{Table: schema + "." + table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// Other code sharing the pool, on its one session.
	if _, err := own.Exec(t.Context(), "CREATE TEMP TABLE "+pgx.Identifier{table + "_fleet"}.Sanitize()+" (id integer, schedule text, version bigint)"); err != nil {
		t.Fatal(err)
	}
	if _, err := own.Exec(t.Context(), "INSERT INTO "+pgx.Identifier{table + "_fleet"}.Sanitize()+" VALUES (1, 'v1', 1)"); err != nil {
		t.Fatal(err)
	}

	fs, err := admin.SetFleetScheduleUnused(t.Context(), 0, "v2")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	v2, err := admin.Claim(t.Context(), lease.ClaimRequest{Holder: "v2 holder", Range: lease.Range{Lo: 20, Hi: 20}, NowMs: now, LeaseFor: time.Minute, Schedule: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := s.Claim(t.Context(), lease.ClaimRequest{Holder: "v1 holder", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: now, LeaseFor: time.Minute})
	if err != nil {
		if !errors.Is(err, lease.ErrSchedule) {
			t.Fatalf("v1 claim: %v, want ErrSchedule", err)
		}
		t.Logf("v1 claim refused: %v — held", err)
		return
	}
	t.Errorf("DUPLICATE POSSIBLE: fleet %+v; a session with a temporary %s_fleet claimed, its store naming the table with its schema, v1 machine %d (token %d) beside v2 machine %d (token %d): %d == %d",
		fs, table, v1.Machine, v1.Token, v2.Machine, v2.Token, 5<<12, 20<<10)
}
