package pgstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
)

// TestScheduleSetAtOnceOnUnusedTable: on a table where no lease record was
// ever written, a change of the fleet schedule applies at once (the notice
// protects holders and marks, and there are none), and the write itself
// counts the rows, so a claim that committed first refuses it with
// ErrInUse and leaves the schedule unset. With a row, the notice rule
// stands and its refusal says what exists.
func TestScheduleSetAtOnceOnUnusedTable(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	now := time.Now()

	fresh := openStore(t, pool, newTable(t, pool))
	set, err := lease.SetSchedule(t.Context(), fresh, "v2", now, 0)
	if err != nil || set != (lease.FleetSchedule{Text: "v2", Version: 1}) {
		t.Fatalf("v2 on a table with no lease record: %+v, %v; want it set at once at version 1", set, err)
	}
	r := lease.ClaimRequest{Holder: "v2 holder", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: now.UnixMilli(), LeaseFor: 10 * time.Second, Schedule: "v2"}
	if _, err := fresh.Claim(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if _, err := lease.SetSchedule(t.Context(), fresh, "v1", now, 0); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "1 holder") {
		t.Errorf("back to v1 with a holder: %v; want ErrInvalid naming 1 holder", err)
	}

	racy := openStore(t, pool, newTable(t, pool))
	if _, err := racy.Claim(t.Context(), lease.ClaimRequest{Holder: "v1 holder", Range: lease.Range{Lo: 3, Hi: 3}, NowMs: now.UnixMilli(), LeaseFor: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := racy.SetFleetScheduleUnused(t.Context(), 0, "v2"); !errors.Is(err, lease.ErrInUse) || !strings.Contains(err.Error(), "1 rows") {
		t.Errorf("SetFleetScheduleUnused with a holder: %v, want ErrInUse counting 1 row", err)
	}
	if fs, err := racy.FleetSchedule(t.Context()); err != nil || fs.Version != 0 {
		t.Errorf("after the refusal the schedule is %+v, %v; want it never set", fs, err)
	}
}

// TestScheduleUnusedLockOrdersClaims: what SetFleetScheduleUnused relies
// on. A claim that reaches the table while a transaction holds the lock
// SetFleetScheduleUnused takes waits for it, and then compares the
// schedule that transaction wrote: a v1 claimer is refused with
// ErrSchedule once the transaction sets v2 and commits. (A claim whose
// snapshot predated the lock would claim under v1 beside a fleet that
// moved at once.)
func TestScheduleUnusedLockOrdersClaims(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s := openStore(t, pool, table)
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	if _, err := tx.Exec(t.Context(), "LOCK TABLE "+pgx.Identifier{table}.Sanitize()+", "+pgx.Identifier{table + "_claims"}.Sanitize()+" IN SHARE ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	claimed := make(chan error, 1)
	go func() {
		_, err := s.Claim(t.Context(), lease.ClaimRequest{Holder: "v1 holder", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: time.Now().UnixMilli(), LeaseFor: 10 * time.Second})
		claimed <- err
	}()
	// Wait (bounded) until the claim's statement waits on the lock.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%'||$1||'%'`, table).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-claimed:
			t.Fatalf("the claim returned (%v) while the lease table was locked", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim never waited on the lock")
		}
		time.Sleep(5 * time.Millisecond) // polling the server's view, bounded above
	}
	if _, err := tx.Exec(t.Context(), "INSERT INTO "+pgx.Identifier{table + "_fleet"}.Sanitize()+" (id, schedule, version) VALUES (1, 'v2', 1)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-claimed; !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("a v1 claim that waited on the lock: %v, want ErrSchedule (the schedule committed before it ran)", err)
	}
}
