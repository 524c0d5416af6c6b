package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// hookPool opens a pool of at most maxConns on the test server whose
// AfterConnect runs stmts on every new session, closed when t ends.
func hookPool(t *testing.T, maxConns int32, hook func(ctx context.Context, c *pgx.Conn) error) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	cfg.AfterConnect = hook
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestAttackClaimInsideOpenTransaction: the claim statement checks the
// isolation of the transaction it runs in, but not that the transaction
// is its own. A pool given to New whose sessions are inside a transaction
// when the store acquires them (an AfterConnect/PrepareConn hook that
// runs BEGIN — READ COMMITTED, so the new clause lets it through) runs
// the claim inside it; pgxpool destroys a connection released in a
// transaction, the server rolls the claim back, and Claim has already
// returned the lease. The number is free again: a second claimer takes
// the same number at the same epoch under the same schedule.
func TestAttackClaimInsideOpenTransaction(t *testing.T) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	other := openStore(t, pool, table)

	hooked := hookPool(t, 1, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "BEGIN")
		return err
	})
	s, err := pgstore.New(hooked, pgstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	now := time.Now().UnixMilli()
	first, err := s.Claim(t.Context(), lease.ClaimRequest{Holder: "first", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: now, LeaseFor: time.Minute})
	if err != nil {
		t.Logf("claim on a session inside an open transaction refused: %v — held", err)
		return
	}
	second, err := other.Claim(t.Context(), lease.ClaimRequest{Holder: "second", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: now, LeaseFor: time.Minute})
	if errors.Is(err, lease.ErrNoFreeNumber) {
		return
	}
	if err != nil {
		t.Fatalf("second claim: %v", err)
	}
	t.Errorf("DUPLICATE: Claim returned machine %d token %d to %q from a claim run inside a transaction it never committed; "+
		"%q then claimed machine %d token %d under the same schedule",
		first.Machine, first.Token, first.Holder, second.Holder, second.Machine, second.Token)
}

// TestAttackUnusedScheduleInsideOpenRepeatableRead: SetFleetScheduleUnused
// and RaiseMarks now ask pgx for READ COMMITTED (BeginTx with IsoLevel),
// but on a session already inside a transaction PostgreSQL answers that
// BEGIN with a warning and the transaction goes on at its own isolation,
// with the snapshot it already took. A pool given to New whose sessions
// are inside a REPEATABLE READ transaction with a snapshot (a hook's
// BEGIN ISOLATION LEVEL REPEATABLE READ and a first read) counts the
// lease table as of that snapshot: a v1 claim committed after it is not
// counted, the fleet schedule changes to v2 at once beside a v1 holder,
// and v1 machine 5 and v2 machine 20 mint the same IDs.
func TestAttackUnusedScheduleInsideOpenRepeatableRead(t *testing.T) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	claimer := openStore(t, pool, table)

	snapped := make(chan struct{})
	resume := make(chan struct{})
	hooked := hookPool(t, 1, func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ"); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, "SELECT 1 FROM pg_class LIMIT 1"); err != nil {
			return err
		}
		close(snapped)
		select {
		case <-resume:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	admin, err := pgstore.New(hooked, pgstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })

	setDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := admin.SetFleetScheduleUnused(ctx, 0, "v2")
		setDone <- err
	}()
	select {
	case <-snapped:
	case <-time.After(30 * time.Second):
		t.Fatal("the admin's session never connected")
	}
	now := time.Now().UnixMilli()
	v1, err := claimer.Claim(t.Context(), lease.ClaimRequest{Holder: "v1 holder", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: now, LeaseFor: time.Minute})
	if err != nil {
		t.Fatalf("v1 claim: %v", err)
	}
	close(resume)
	if err := <-setDone; err != nil {
		if errors.Is(err, lease.ErrInUse) {
			t.Logf("schedule change refused: %v — held", err)
			return
		}
		t.Logf("schedule change failed otherwise: %v — held", err)
		return
	}
	fs, _ := claimer.FleetSchedule(t.Context())
	v2, err := claimer.Claim(t.Context(), lease.ClaimRequest{Holder: "v2 holder", Range: lease.Range{Lo: 20, Hi: 20}, NowMs: now, LeaseFor: time.Minute, Schedule: "v2"})
	if err != nil {
		t.Fatalf("fleet schedule set at once to %+v beside v1 machine %d; the v2 claim: %v", fs, v1.Machine, err)
	}
	t.Errorf("DUPLICATE POSSIBLE: SetFleetScheduleUnused set %+v at once while v1 holder held machine %d (token %d); v2 holder holds machine %d "+
		"(token %d): v1 machine 5 == v2 region 0 machine 20 (%d == %d)", fs, v1.Machine, v1.Token, v2.Machine, v2.Token, 5<<12, 20<<10)
}

// TestAttackExtendInsideOpenTransaction: the same for a renewal. Extend on
// a session inside a READ COMMITTED transaction the store never commits
// returns the new mark; pgxpool destroys the connection and the server
// rolls the mark back; a claimer whose clock is past the old mark but
// before the acknowledged one takes the number over while the holder may
// still issue up to the acknowledged mark.
func TestAttackExtendInsideOpenTransaction(t *testing.T) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	other := openStore(t, pool, table)

	hooked := hookPool(t, 1, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "BEGIN")
		return err
	})
	s, err := pgstore.New(hooked, pgstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	now := time.Now().UnixMilli()
	l, err := other.Claim(t.Context(), lease.ClaimRequest{Holder: "first", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: now, LeaseFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ext, err := s.Extend(t.Context(), l, now+3*60000, 3*time.Minute)
	if err != nil {
		t.Logf("extension on a session inside an open transaction refused: %v — held", err)
		return
	}
	later := now + 61000 // past the claimed mark, before the acknowledged one
	second, err := other.Claim(t.Context(), lease.ClaimRequest{Holder: "second", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: later, LeaseFor: time.Minute})
	if err != nil {
		return
	}
	t.Errorf("DUPLICATE: Extend acknowledged machine %d token %d to mark %s, but the row was rolled back; %q claimed machine %d token %d "+
		"starting %s, below the acknowledged mark", ext.Machine, ext.Token, lease.FormatMs(ext.MarkMs), second.Holder, second.Machine, second.Token,
		lease.FormatMs(second.StartMs))
}

// TestAttackUnusedScheduleAfterRolledBackClaim: the open-transaction hole
// against the at-once change. A v1 claim on a session a hook left inside
// a READ COMMITTED transaction returns machine 5; the server rolls it back
// with the destroyed connection, so SetFleetScheduleUnused counts nothing
// and sets v2 at once; a v2 holder takes machine 20 beside the v1 holder
// of machine 5.
func TestAttackUnusedScheduleAfterRolledBackClaim(t *testing.T) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	admin := openStore(t, pool, table)

	hooked := hookPool(t, 1, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "BEGIN")
		return err
	})
	s, err := pgstore.New(hooked, pgstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	now := time.Now().UnixMilli()
	v1, err := s.Claim(t.Context(), lease.ClaimRequest{Holder: "v1 holder", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: now, LeaseFor: time.Minute})
	if err != nil {
		t.Logf("v1 claim refused: %v — held", err)
		return
	}
	fs, err := admin.SetFleetScheduleUnused(t.Context(), 0, "v2")
	if err != nil {
		if errors.Is(err, lease.ErrInUse) {
			return
		}
		t.Fatalf("SetFleetScheduleUnused: %v", err)
	}
	v2, err := admin.Claim(t.Context(), lease.ClaimRequest{Holder: "v2 holder", Range: lease.Range{Lo: 20, Hi: 20}, NowMs: now, LeaseFor: time.Minute, Schedule: "v2"})
	if err != nil {
		t.Fatalf("v2 claim: %v", err)
	}
	t.Errorf("DUPLICATE POSSIBLE: fleet schedule %+v set at once while v1 holder held machine %d (token %d) from a rolled-back claim; "+
		"v2 holder holds machine %d (token %d): %d == %d", fs, v1.Machine, v1.Token, v2.Machine, v2.Token, 5<<12, 20<<10)
}
