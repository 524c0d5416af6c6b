package pgstore_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// TestAttackTempTableShadowsFleet: New's documentation names the hole of
// an unqualified table on a shared pool as "code that changes a pooled
// session's search_path". No search_path change is needed: pg_temp is
// searched first for relations, so other code on the pool that creates a
// temporary table named like <table>_fleet (with any schedule in it)
// redirects that session's claims' schedule comparison, at READ
// COMMITTED, with no interleaving: after a change at once to v2, a v1
// claim on that session takes machine 5 beside a v2 holder of machine 20.
func TestAttackTempTableShadowsFleet(t *testing.T) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	admin := openStore(t, pool, table)
	own := testPool(t, 1)
	s, err := pgstore.New(own, pgstore.Config{Table: table})
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
		t.Logf("v1 claim refused: %v — held", err)
		return
	}
	t.Errorf("DUPLICATE POSSIBLE: fleet %+v; a session with a temporary %s_fleet (no search_path change) claimed v1 machine %d (token %d) beside v2 machine %d (token %d): %d == %d",
		fs, table, v1.Machine, v1.Token, v2.Machine, v2.Token, 5<<12, 20<<10)
}
