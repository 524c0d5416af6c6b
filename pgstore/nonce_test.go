package pgstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// onQueryError is a pgx.QueryTracer that runs f once, armed, when a query
// ends in an error: between the failure of a store's statement and the
// store's next step.
type onQueryError struct {
	armed atomic.Bool
	f     func()
}

func (h *onQueryError) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (h *onQueryError) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if d.Err != nil && h.armed.CompareAndSwap(true, false) {
		h.f()
	}
}

// waitBlockedBy polls pg_stat_activity until a backend waits on a lock
// held by backend pid, for at most 20 s.
func waitBlockedBy(t *testing.T, pool *pgxpool.Pool, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no backend blocked behind backend %d after 20 s", pid)
		}
		time.Sleep(5 * time.Millisecond) // polling the server, not standing in for an event
	}
}

// TestSharedHolderAdoptsOnlyItsOwnClaim replays path 2 of issue 10 on the
// real server: K1 and K2 share one holder string (two keepers of one
// process, or two processes given one --holder) and claim number 5, read
// free at epoch 3. K1's claim statement has written epoch 4 and holds the
// row lock (a transaction the test keeps open); K2's upsert waits behind
// it until K2's context ends, and K1's claim commits before K2 re-reads
// the row. The row then names K2's holder with the epoch after the one K2
// read — exactly what an own claim that committed looks like by holder and
// epoch. K2 must not adopt it: only a row carrying K2's own nonce is
// K2's. (Adopted, both leases extend, since holder and epoch match, and
// both mint on number 5.)
func TestSharedHolderAdoptsOnlyItsOwnClaim(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s1 := openStore(t, pool, table)
	if _, err := pool.Exec(t.Context(), "INSERT INTO "+pgx.Identifier{table}.Sanitize()+
		" (region, machine_id, holder, lease_expiry, lease_epoch) VALUES (0, 5, '', 1000, 3)"); err != nil {
		t.Fatal(err)
	}

	hook := &onQueryError{}
	cfg, err := pgxpool.ParseConfig(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = hook
	pool2, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool2.Close)
	s2, err := pgstore.New(pool2, pgstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}

	const holder = "shared-holder"
	nowMs := time.Now().UnixMilli()
	req := lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 5, Hi: 5}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: 2 * time.Second}

	// K1's claim, in flight: the store's own statement with K1's nonce, in
	// a transaction that keeps the row locked.
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var pid int
	if err := tx.QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	k1Nonce := lease.NewNonce()
	stmt, args := s1.ClaimStatement(req, 5, k1Nonce)
	var k1Epoch, k1Expiry, k1Floor *int64
	var sysid, oldSysid *string
	var tl, oldTl *int64
	var same bool
	var isolation string
	if err := tx.QueryRow(t.Context(), stmt, args...).Scan(&k1Epoch, &k1Expiry, &k1Floor, &sysid, &tl, &oldSysid, &oldTl, &same, &isolation); err != nil || k1Epoch == nil {
		t.Fatalf("K1's claim statement: epoch %v, %v; want a claim", k1Epoch, err)
	}
	k1 := &lease.Lease{Machine: 5, Holder: holder, Token: uint64(*k1Epoch), StartMs: max(nowMs, *k1Floor), MarkMs: *k1Expiry, Schedule: "v1", Claim: k1Nonce}
	if k1.Token != 4 {
		t.Fatalf("K1's epoch = %d, want 4", k1.Token)
	}

	// K2's claim waits on K1's row lock; when its context ends, K1 commits
	// before K2 reads the row again.
	hook.f = func() {
		if err := tx.Commit(context.Background()); err != nil {
			t.Errorf("commit K1's claim: %v", err)
		}
	}
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	type result struct {
		l   *lease.Lease
		err error
	}
	done := make(chan result, 1)
	hook.armed.Store(true)
	go func() {
		l, err := s2.Claim(ctx2, req)
		done <- result{l, err}
	}()
	waitBlockedBy(t, pool, pid)
	cancel2() // K2's request timeout
	var k2 result
	select {
	case k2 = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("K2's claim did not return 30 s after its context ended")
	}
	if hook.armed.Load() {
		t.Fatal("K2's claim never failed, so K1's claim never committed: the test did not reach the re-read")
	}
	if rec := mustGetRec(t, s1, 5); rec.Holder != holder || rec.Token != k1.Token {
		t.Fatalf("row after K1's commit = %+v, want K1's claim (epoch %d)", rec, k1.Token)
	}

	if k2.err == nil {
		ctx := t.Context()
		_, e1 := s1.Extend(ctx, k1, nowMs+20000, 10*time.Second)
		_, e2 := s2.Extend(ctx, k2.l, nowMs+20000, 10*time.Second)
		t.Fatalf("K2 adopted K1's claim after its own timed out: K2's lease %v, K1's epoch %d; both extend (K1: %v, K2: %v) and mint on number 5",
			k2.l, k1.Token, e1, e2)
	}
	t.Logf("K2's claim, refused as it should be: %v", k2.err)
	if _, err := s1.Extend(t.Context(), k1, nowMs+20000, 10*time.Second); err != nil {
		t.Errorf("K1's lease after K2 gave up: Extend = %v, want it extended", err)
	}
}
