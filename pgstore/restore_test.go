package pgstore_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// fakeIdentity makes a table <table>_ident whose one row stands for the
// server's system identifier and WAL timeline, and returns the statement
// that reads it and a function that changes it (a failover, a restore into
// another cluster).
func fakeIdentity(t *testing.T, pool *pgxpool.Pool, table string) (string, func(sysid string, tl int64)) {
	t.Helper()
	name := pgx.Identifier{table + "_ident"}.Sanitize()
	if _, err := pool.Exec(t.Context(), "CREATE TABLE "+name+" (sysid text NOT NULL, tl bigint NOT NULL); INSERT INTO "+name+" VALUES ('7000000000000000001', 1)"); err != nil {
		t.Fatal(err)
	}
	return "SELECT sysid, tl FROM " + name, func(sysid string, tl int64) {
		t.Helper()
		if _, err := pool.Exec(t.Context(), "UPDATE "+name+" SET sysid = $1, tl = $2", sysid, tl); err != nil {
			t.Fatal(err)
		}
	}
}

func openFake(t *testing.T, pool *pgxpool.Pool, table, ident string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.NewWithIdentity(pool, pgstore.Config{Table: table, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}, ident)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestFailoverFencesEveryHolder: the server's WAL timeline changes (a
// standby promoted after an asynchronous failover, or a point-in-time
// recovery: acknowledged marks may be gone). From then on no extension
// succeeds on a lease claimed before — ErrRestored, in the store that
// claimed it and in another process's — and the first claim after it, in
// any process, records the change: every holder is fenced, and every
// claim, including one by a process that never saw the old server, starts
// at or after the noticing claimer's clock plus its restore window. A
// change of system identifier (another cluster) is a restore too.
//
// The server's identity comes from a table the test controls (the seam of
// export_test.go); the real test would put a second cluster behind a
// switchable loopback proxy.
func TestFailoverFencesEveryHolder(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 8)
	table := newTable(t, pool)
	ident, set := fakeIdentity(t, pool, table)
	sA, sB := openFake(t, pool, table, ident), openFake(t, pool, table, ident)
	nowMs := time.Now().UnixMilli()
	req := func(holder string, n int, at int64) lease.ClaimRequest {
		return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: n, Hi: n}, NowMs: at, LeaseFor: 10 * time.Second,
			MaxAhead: time.Hour, RestoreWindow: 30 * time.Second}
	}
	claim := func(s *pgstore.Store, r lease.ClaimRequest) *lease.Lease {
		t.Helper()
		l, err := s.Claim(t.Context(), r)
		if err != nil {
			t.Fatalf("claim of %d by %s: %v", r.Range.Lo, r.Holder, err)
		}
		return l
	}
	extend := func(s *pgstore.Store, l *lease.Lease, mark int64) error {
		_, err := s.Extend(t.Context(), l, mark, 10*time.Second)
		return err
	}
	lA := claim(sA, req("a", 1, nowMs))
	if err := extend(sA, lA, nowMs+10000); err != nil {
		t.Fatal(err)
	}
	lB := claim(sB, req("b", 2, nowMs))

	set("7000000000000000001", 2) // failover: a new timeline
	if err := extend(sA, lA, nowMs+11000); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("Extend on the new timeline before any claim noticed it: %v, want ErrRestored", err)
	}
	notice := nowMs + 1000
	lC := claim(sB, req("c", 3, notice))
	if want := notice + 30000; lC.StartMs < want {
		t.Errorf("first claim after the failover starts at %d, want ≥ its clock + restore window = %d", lC.StartMs, want)
	}
	for name, c := range map[string]struct {
		s *pgstore.Store
		l *lease.Lease
	}{"A's lease, in A's store": {sA, lA}, "B's lease, in B's store": {sB, lB}, "A's lease, in B's store": {sB, lA}} {
		if err := extend(c.s, c.l, nowMs+12000); !errors.Is(err, lease.ErrRestored) {
			t.Errorf("%s after the failover was recorded: Extend = %v, want ErrRestored", name, err)
		}
	}
	for _, n := range []int{1, 2} {
		if rec := mustGetRec(t, sA, n); rec.Held() {
			t.Errorf("number %d after the failover was recorded: %+v, want no holder", n, rec)
		}
	}
	if err := extend(sB, lC, lC.StartMs+10000); err != nil {
		t.Errorf("the lease claimed after the failover: Extend = %v, want it extended", err)
	}
	// A process that never saw the old server, with a longer window of
	// its own, claims A's number.
	sD := openFake(t, pool, table, ident)
	r := req("d", 1, notice+2000)
	r.RestoreWindow = time.Minute
	if l := claim(sD, r); l.StartMs < notice+60000 {
		t.Errorf("claim by a fresh process with a 1 min window starts at %d, want ≥ the notice + 1 min = %d", l.StartMs, notice+60000)
	}

	set("7000000000000000002", 2) // another cluster
	lE := claim(sA, req("e", 4, notice+5000))
	if want := notice + 5000 + 30000; lE.StartMs < want {
		t.Errorf("first claim on another cluster starts at %d, want ≥ %d", lE.StartMs, want)
	}
	if err := extend(sB, lC, lC.StartMs+20000); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("lease of the first restore after the second: Extend = %v, want ErrRestored", err)
	}
	var restores int64
	if err := pool.QueryRow(t.Context(), "SELECT restores FROM "+pgx.Identifier{table + "_origin"}.Sanitize()).Scan(&restores); err != nil || restores != 2 {
		t.Errorf("restores recorded = %d, %v; want 2", restores, err)
	}
}

// TestOriginIsTheServersIdentity: Migrate records the real server's system
// identifier (pg_control_system) and the timeline of its current WAL file,
// as a role without special privileges may read them, and claims then run.
func TestOriginIsTheServersIdentity(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s := openStore(t, pool, table)
	var sysid, want string
	var tl, wantTl int64
	if err := pool.QueryRow(t.Context(), "SELECT system_identifier, timeline FROM "+pgx.Identifier{table + "_origin"}.Sanitize()).Scan(&sysid, &tl); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(t.Context(), `SELECT system_identifier::text, ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint
	  FROM pg_control_system()`).Scan(&want, &wantTl); err != nil {
		t.Fatal(err)
	}
	if sysid != want || tl != wantTl || tl < 1 {
		t.Errorf("origin = system %s timeline %d, want %s timeline %d", sysid, tl, want, wantTl)
	}
	l, err := s.Claim(t.Context(), lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: time.Now().UnixMilli(), LeaseFor: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Extend(t.Context(), l, l.StartMs+1000, time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestConnectForcesSynchronousCommit: the test server runs with
// synchronous_commit = off (scripts/services/postgres.sh), which loses
// acknowledged commits in a crash; the store's own sessions run with it on.
func TestConnectForcesSynchronousCommit(t *testing.T) {
	t.Parallel()
	s, err := pgstore.Connect(t.Context(), testURL(t), pgstore.Config{Table: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got string
	if err := s.Pool().QueryRow(t.Context(), "SHOW synchronous_commit").Scan(&got); err != nil || got != "on" {
		t.Errorf("synchronous_commit in the store's session = %q, %v; want on", got, err)
	}
}
