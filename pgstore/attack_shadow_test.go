package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// TestAttackIsolationClauseShadowed: the claim's isolation check calls
// current_setting unqualified. New's documentation says to qualify the
// table name on a shared pool, so that another session's search_path
// cannot redirect the store; but the fence clauses' functions resolve
// through search_path as well. A session whose search_path names
// pg_catalog explicitly after a schema holding a current_setting(text)
// (any role with CREATE on a schema in the path — public, before
// PostgreSQL 15) runs the claim's check against that function: at
// REPEATABLE READ it answers 'read committed', the claim that waited on
// SetFleetScheduleUnused's lock claims under v1 beside a v2 holder, with
// the table named schema-qualified.
func TestAttackIsolationClauseShadowed(t *testing.T) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	admin := openStore(t, pool, table)

	b := make([]byte, 4)
	rand.Read(b)
	schema := "atk_" + hex.EncodeToString(b)
	qs := pgx.Identifier{schema}.Sanitize()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+qs+" CASCADE")
	})
	for _, stmt := range []string{
		"CREATE SCHEMA " + qs,
		"CREATE FUNCTION " + qs + ".current_setting(text) RETURNS text LANGUAGE sql STABLE AS $$ SELECT CASE WHEN $1 = 'transaction_isolation' THEN 'read committed' ELSE pg_catalog.current_setting($1) END $$",
	} {
		if _, err := pool.Exec(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	hooked := hookPool(t, 1, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET search_path = "+qs+", pg_catalog, public")
		if err == nil {
			_, err = c.Exec(ctx, "SET default_transaction_isolation = 'repeatable read'")
		}
		return err
	})
	rr, err := pgstore.New(hooked, pgstore.Config{Table: "public." + table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rr.Close() })
	// Warm the session, as the existing interleaving does.
	if _, err := rr.Claim(t.Context(), lease.ClaimRequest{Holder: "warm", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: time.Now().UnixMilli(), LeaseFor: time.Minute, Schedule: "v2"}); err == nil {
		t.Fatal("warm-up claim under v2 succeeded on a v1 fleet")
	}

	t1, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer t1.Rollback(context.Background())
	if _, err := t1.Exec(t.Context(), "INSERT INTO "+pgx.Identifier{table + "_fleet"}.Sanitize()+" (id, schedule, version) VALUES (1, 'v1', 1)"); err != nil {
		t.Fatal(err)
	}
	setDone := make(chan error, 1)
	go func() {
		_, err := admin.SetFleetScheduleUnused(context.Background(), 0, "v2")
		setDone <- err
	}()
	waitLockWaiters(t, pool, table, 1)

	now := time.Now().UnixMilli()
	claimDone := make(chan error, 1)
	var v1 *lease.Lease
	go func() {
		l, err := rr.Claim(context.Background(), lease.ClaimRequest{Holder: "v1 holder", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: now, LeaseFor: time.Minute})
		v1 = l
		claimDone <- err
	}()
	waitLockWaiters(t, pool, table, 2)
	if err := t1.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-setDone; err != nil {
		t.Fatalf("SetFleetScheduleUnused: %v", err)
	}
	claimErr := <-claimDone
	fs, _ := admin.FleetSchedule(t.Context())
	if claimErr != nil {
		if !errors.Is(claimErr, lease.ErrInvalid) && !errors.Is(claimErr, lease.ErrSchedule) {
			t.Fatalf("v1 claim refused with %v", claimErr)
		}
		t.Logf("v1 claim refused (%v); fleet %+v — held", claimErr, fs)
		return
	}
	v2, err := admin.Claim(t.Context(), lease.ClaimRequest{Holder: "v2 holder", Range: lease.Range{Lo: 20, Hi: 20}, NowMs: now, LeaseFor: time.Minute, Schedule: "v2"})
	if err != nil {
		t.Fatalf("v1 holder claimed %d under v1 after the fleet moved to %+v; the v2 claim: %v", v1.Machine, fs, err)
	}
	t.Errorf("DUPLICATE POSSIBLE: a REPEATABLE READ claim on public.%s passed the isolation clause through %s.current_setting; fleet %+v set at once; "+
		"v1 holder holds machine %d (token %d), v2 holder machine %d (token %d): %d == %d",
		table, schema, fs, v1.Machine, v1.Token, v2.Machine, v2.Token, 5<<12, 20<<10)
}
