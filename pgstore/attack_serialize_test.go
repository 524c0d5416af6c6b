package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// TestAttackUnusedScheduleSetOverVersion: the at-once interleaving over a
// fleet row that exists (prev 1, an UPDATE rather than the insert the
// existing tests play), with the claimer's session at REPEATABLE READ,
// with and without a registry row (whose comparison reads the fleet row
// FOR SHARE, which at REPEATABLE READ would fail with a serialization
// error on a row updated after the snapshot, and then the claim's error
// would say "retry" rather than name the isolation). The planner
// evaluates the isolation clause (cheap) before the CTEs' subplans, so
// the claim is refused with ErrInvalid naming READ COMMITTED — held.
func TestAttackUnusedScheduleSetOverVersion(t *testing.T) {
	for _, reg := range []bool{false, true} {
		name := "no registry row"
		if reg {
			name = "registry row recording v1"
		}
		t.Run(name, func(t *testing.T) { setOverVersion(t, reg) })
	}
}

// setOverVersion plays it, with a registry row whose schedule the claim
// compares with the fleet row it reads FOR SHARE if reg.
func setOverVersion(t *testing.T, reg bool) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	admin := openStore(t, pool, table)
	if _, err := admin.SetFleetScheduleUnused(t.Context(), 0, "v1"); err != nil {
		t.Fatal(err)
	}
	if reg {
		if _, err := pool.Exec(t.Context(), "INSERT INTO "+pgx.Identifier{table + "_region"}.Sanitize()+` (id, version, body) VALUES (1, 1, '{"schedule": "v1"}')`); err != nil {
			t.Fatal(err)
		}
	}
	url := testURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	own, err := pgxpool.New(t.Context(), url+sep+"pool_max_conns=1&default_transaction_isolation=repeatable%20read")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(own.Close)
	rr, err := pgstore.New(own, pgstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rr.Close() })

	t1, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer t1.Rollback(context.Background())
	if _, err := t1.Exec(t.Context(), "SELECT 1 FROM "+pgx.Identifier{table + "_fleet"}.Sanitize()+" WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	setDone := make(chan error, 1)
	go func() {
		_, err := admin.SetFleetScheduleUnused(context.Background(), 1, "v2")
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
	if claimErr == nil {
		t.Fatalf("DUPLICATE POSSIBLE: v1 claim of machine %d (token %d) after the fleet moved at once to %+v", v1.Machine, v1.Token, fs)
	}
	if !errors.Is(claimErr, lease.ErrInvalid) || !strings.Contains(claimErr.Error(), "READ COMMITTED") {
		t.Fatalf("v1 claim at REPEATABLE READ failed with %v; want ErrInvalid naming READ COMMITTED (safe: nothing written)", claimErr)
	}
	t.Logf("v1 claim refused (%v) — held", claimErr)
}
