package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// Attack on checkIsolation ("Checked until it once succeeds"): the check
// reads current_setting('transaction_isolation') on whichever pool
// connection QueryRow gets, once; every later claim runs on whatever
// connection the pool hands out, with whatever default it has by then. A
// pool given to New whose sessions later run REPEATABLE READ is accepted:
//
//   - session: the application sharing the pool (New takes the caller's
//     pool) runs SET default_transaction_isolation on a connection and
//     returns it to the pool;
//   - role: the DBA sets ALTER ROLE ... SET default_transaction_isolation
//     after the holder started, and the pool reconnects (a server restart,
//     a failover, max_conn_lifetime — here pool.Reset).
//
// Then the interleaving of TestUnusedScheduleRepeatableRead goes through:
// a claim waiting on SetFleetScheduleUnused's lock claims under v1 after v2
// was set at once.
func TestAttackIsolationCheckedOnceSession(t *testing.T) {
	isolationLater(t, "session")
}

// TestAttackIsolationCheckedOnceRole: the same with the role's default
// changed and the pool's connections replaced.
func TestAttackIsolationCheckedOnceRole(t *testing.T) {
	isolationLater(t, "role")
}

func isolationLater(t *testing.T, how string) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	admin := openStore(t, pool, table)

	u, err := url.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	var role string
	if how == "role" {
		b := make([]byte, 4)
		rand.Read(b)
		role = "attack_iso_" + hex.EncodeToString(b)
		if _, err := pool.Exec(t.Context(), "CREATE ROLE "+role+" LOGIN SUPERUSER PASSWORD 'attack'"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) })
		u.User = url.UserPassword(role, "attack")
	}
	q := u.Query()
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	own, err := pgxpool.New(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(own.Close)
	rr, err := pgstore.New(own, pgstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rr.Close() })

	// The holder's first claim: the pool runs READ COMMITTED, checkIsolation
	// passes and is never asked again (refused by the schedule: writes nothing).
	if _, err := rr.Claim(t.Context(), lease.ClaimRequest{Holder: "warm", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: time.Now().UnixMilli(), LeaseFor: time.Minute, Schedule: "v2"}); err == nil || strings.Contains(err.Error(), "READ COMMITTED") {
		t.Fatalf("warm-up claim: %v, want a schedule refusal", err)
	}

	switch how {
	case "session":
		if _, err := own.Exec(t.Context(), "SET default_transaction_isolation = 'repeatable read'"); err != nil {
			t.Fatal(err)
		}
	case "role":
		if _, err := pool.Exec(t.Context(), "ALTER ROLE "+role+" SET default_transaction_isolation = 'repeatable read'"); err != nil {
			t.Fatal(err)
		}
		own.Reset()
	}
	var level string
	if err := own.QueryRow(t.Context(), "SELECT current_setting('transaction_isolation')").Scan(&level); err != nil {
		t.Fatal(err)
	}
	t.Logf("the holder's pool now runs %q", level)
	// Prepare the claim statement on the (new) connection, as the warm-up
	// of TestUnusedScheduleRepeatableRead does.
	if _, err := rr.Claim(t.Context(), lease.ClaimRequest{Holder: "warm", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: time.Now().UnixMilli(), LeaseFor: time.Minute, Schedule: "v2"}); err == nil || strings.Contains(err.Error(), "READ COMMITTED") {
		t.Fatalf("second warm-up claim: %v, want a schedule refusal", err)
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
		t.Logf("v1 claim refused (%v); fleet %+v: no hole", claimErr, fs)
		return
	}
	v2, err := admin.Claim(t.Context(), lease.ClaimRequest{Holder: "v2 holder", Range: lease.Range{Lo: 20, Hi: 20}, NowMs: now, LeaseFor: time.Minute, Schedule: "v2"})
	if err != nil {
		t.Fatalf("v1 holder claimed %d under v1 after the fleet moved to %+v; the v2 claim: %v", v1.Machine, fs, err)
	}
	t.Errorf("DUPLICATE POSSIBLE (%s isolation changed after checkIsolation passed once): fleet schedule %+v set at once while a claim waited on the lock; "+
		"v1 holder holds machine %d (token %d) and v2 holder machine %d (token %d): v1 machine 5 seq s == v2 region 0 machine 20 seq s "+
		"at the same millisecond (%d == %d)", how, fs, v1.Machine, v1.Token, v2.Machine, v2.Token, 5<<12, 20<<10)
}
