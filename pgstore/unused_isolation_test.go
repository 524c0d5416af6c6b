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

// TestUnusedScheduleRepeatableRead: SetFleetScheduleUnused relies
// on a claim that waited on its LOCK taking its snapshot after the lock. In
// READ COMMITTED that holds; in REPEATABLE READ (a database or role whose
// default_transaction_isolation is 'repeatable read', the same in the URL,
// or code sharing the pool that SETs it on a session) a statement's
// snapshot is taken before parse analysis acquires its locks, so the claim
// waits on the lock with a snapshot from before the schedule change and
// would claim under v1 after v2 was set at once. Then a v1 holder and a v2
// holder both hold numbers: v1 machine 5 and v2 region 0 machine 20 give
// the same ID at the same millisecond and sequence (5<<12 == 20<<10).
//
// Each case plays that interleaving: through Connect (which sets READ
// COMMITTED for its sessions: the claim sees v2 and is refused with
// ErrSchedule), through New on a pool whose sessions default to the
// isolation, and through New on a pool whose one session is SET to it
// after a first claim went through at READ COMMITTED (an earlier check
// made once per Store passed it): both refused by the claim statement
// itself (ErrInvalid).
func TestUnusedScheduleRepeatableRead(t *testing.T) {
	for _, via := range isolationRoutes {
		t.Run(via, func(t *testing.T) { unusedUnderIsolation(t, "repeatable read", via) })
	}
}

// TestUnusedScheduleSerializable: the same with SERIALIZABLE.
func TestUnusedScheduleSerializable(t *testing.T) {
	for _, via := range isolationRoutes {
		t.Run(via, func(t *testing.T) { unusedUnderIsolation(t, "serializable", via) })
	}
}

// The ways a claimer's sessions come to run at another isolation.
var isolationRoutes = []string{"Connect", "New", "New, SET after a first claim"}

// unusedUnderIsolation runs the interleaving with the claimer's one
// session at isolation, reached by via (isolationRoutes).
func unusedUnderIsolation(t *testing.T, isolation, via string) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	admin := openStore(t, pool, table)

	sep := "?"
	if strings.Contains(testURL(t), "?") {
		sep = "&"
	}
	url := testURL(t) + sep + "pool_max_conns=1"
	if via != "New, SET after a first claim" {
		url += "&default_transaction_isolation=" + strings.ReplaceAll(isolation, " ", "%20")
	}
	var rr *pgstore.Store
	var own *pgxpool.Pool
	var err error
	if via == "Connect" {
		rr, err = pgstore.Connect(t.Context(), url, pgstore.Config{Table: table})
	} else if own, err = pgxpool.New(t.Context(), url); err == nil {
		t.Cleanup(own.Close)
		rr, err = pgstore.New(own, pgstore.Config{Table: table})
	}
	if err != nil {
		t.Fatalf("%s: %v", via, err)
	}
	t.Cleanup(func() { rr.Close() })

	// Warm up: the claim statement prepared on the one connection (a
	// refused claim writes nothing), so that the next claim's Bind takes
	// the snapshot and then waits on the lock in one transaction.
	if _, err := rr.Claim(t.Context(), lease.ClaimRequest{Holder: "warm", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: time.Now().UnixMilli(), LeaseFor: time.Minute, Schedule: "v2"}); err == nil {
		t.Fatal("warm-up claim under v2 succeeded on a v1 fleet")
	}
	if via == "New, SET after a first claim" {
		c, err := own.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Exec(t.Context(), "SET default_transaction_isolation = '"+isolation+"'")
		c.Release()
		if err != nil {
			t.Fatal(err)
		}
	}

	// T1: an uncommitted insert of the fleet row, so that the schedule
	// change's own insert waits on it while holding the table lock.
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
		want, name := lease.ErrSchedule, "ErrSchedule"
		if via != "Connect" {
			want, name = lease.ErrInvalid, "ErrInvalid naming READ COMMITTED"
		}
		if !errors.Is(claimErr, want) || (via != "Connect" && !strings.Contains(claimErr.Error(), "READ COMMITTED")) {
			t.Fatalf("v1 claim refused with %v; want %s", claimErr, name)
		}
		t.Logf("v1 claim refused (%v); fleet %+v: no hole", claimErr, fs)
		return
	}
	v2, err := admin.Claim(t.Context(), lease.ClaimRequest{Holder: "v2 holder", Range: lease.Range{Lo: 20, Hi: 20}, NowMs: now, LeaseFor: time.Minute, Schedule: "v2"})
	if err != nil {
		t.Fatalf("v1 holder claimed %d under v1 after the fleet moved to %+v; the v2 claim: %v", v1.Machine, fs, err)
	}
	_, extErr := rr.Extend(t.Context(), v1, now+2*60000, 2*time.Minute)
	t.Errorf("FENCE BREACH (v1 lease's first Extend: %v): ", extErr)
	t.Errorf("DUPLICATE POSSIBLE for a holder issuing on its claim: fleet schedule %+v set at once while a %s claim waited on the lock; "+
		"v1 holder holds machine %d (token %d) and v2 holder machine %d (token %d): v1 machine 5 seq s == v2 region 0 machine 20 seq s "+
		"at the same millisecond (%d == %d)", fs, isolation, v1.Machine, v1.Token, v2.Machine, v2.Token, 5<<12, 20<<10)
}

// waitLockWaiters waits (bounded) until n sessions wait on a lock in a
// statement naming table.
func waitLockWaiters(t *testing.T, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, table string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%'||$1||'%' AND pid <> pg_backend_pid()`, table).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d sessions waited on a lock", waiting, n)
		}
		time.Sleep(5 * time.Millisecond) // polling the server's view, bounded above
	}
}
