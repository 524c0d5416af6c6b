package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// TestAttackUnusedScheduleGenericPlan: at READ COMMITTED, a claim
// statement whose generic plan is cached (plan_cache_mode =
// force_generic_plan, warmed by refused claims) takes its locks at Bind
// (AcquireExecutorLocks) and its snapshot only at execution, so a claim
// that waited on SetFleetScheduleUnused's lock still sees the schedule
// written and is refused with ErrSchedule — held.
func TestAttackUnusedScheduleGenericPlan(t *testing.T) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	admin := openStore(t, pool, table)
	hooked := hookPool(t, 1, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET plan_cache_mode = force_generic_plan")
		return err
	})
	rc, err := pgstore.New(hooked, pgstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	for i := 0; i < 6; i++ {
		if _, err := rc.Claim(t.Context(), lease.ClaimRequest{Holder: "warm", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: time.Now().UnixMilli(), LeaseFor: time.Minute, Schedule: "v2"}); err == nil {
			t.Fatal("warm-up claim under v2 succeeded on a v1 fleet")
		}
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
		l, err := rc.Claim(context.Background(), lease.ClaimRequest{Holder: "v1 holder", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: now, LeaseFor: time.Minute})
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
		if !errors.Is(claimErr, lease.ErrSchedule) {
			t.Fatalf("v1 claim refused with %v; want ErrSchedule", claimErr)
		}
		t.Logf("v1 claim refused (%v); fleet %+v — held", claimErr, fs)
		return
	}
	t.Errorf("DUPLICATE POSSIBLE: a READ COMMITTED claim with a cached generic plan claimed machine %d (token %d) under v1 after the fleet moved to %+v at once",
		v1.Machine, v1.Token, fs)
}
