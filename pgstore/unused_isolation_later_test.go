package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// An attack on the check of the pool's isolation that claims once made
// until it first succeeded (now each claim sets READ COMMITTED for its own
// transaction, claimReadCommitted): every later claim ran on whatever
// connection the pool handed out, with whatever default it had by then. A
// pool given to New whose sessions later ran REPEATABLE READ was accepted:
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

	// The holder's first claim, while the pool runs READ COMMITTED (refused
	// by the schedule: writes nothing).
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

	interleaveUnused(t, pool, table, admin, rr, how+" default_transaction_isolation changed after the store started")
}
