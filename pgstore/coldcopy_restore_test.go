package pgstore_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/snowfence/snowfence/internal/testkit/coldrestore"
	"github.com/snowfence/snowfence/internal/testkit/storeproc"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// pgServer is a private PostgreSQL cluster (Debian's programs under
// /usr/lib/postgresql/*/bin, on a free loopback port) with one lease table,
// for coldrestore.Run.
type pgServer struct {
	*storeproc.Postgres
	table string
}

func (p pgServer) Open(t *testing.T) lease.Store {
	t.Helper()
	s, err := pgstore.Connect(t.Context(), p.URL(), pgstore.Config{Table: p.table, TestBound: testbound.Of(coldrestore.Slow.SelfFence),
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (p pgServer) Start(ctx context.Context) error { return p.Postgres.Start(ctx, false) }

func (p pgServer) Restore(ctx context.Context, copy string) error {
	return p.Postgres.Restore(ctx, copy, false)
}

// coldServer starts a private PostgreSQL cluster with one empty lease
// table.
func coldServer(t *testing.T) pgServer {
	t.Helper()
	pg, err := storeproc.StartPostgres(t.Context())
	if errors.Is(err, storeproc.ErrMissing) {
		testenv.Missing(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	srv := pgServer{Postgres: pg, table: "leases"}
	if err := srv.Open(t).(*pgstore.Store).Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestColdCopyRestoreWhileHoldersRun: a PostgreSQL put back on a cold copy
// of its own data directory — same system identifier, same timeline —
// while holders run, and a new holder started at once (issue 25, item 5;
// the sequence is coldrestore.Run's). Every ID minted is kept: none may be
// issued twice. Built with -tags
// snowfence_revert_tablerestore,snowfence_revert_notice (the rows' signs of
// a restore ignored, and no wait before a claim's first grant, which covers
// the sequence a second time) it mints duplicates.
func TestColdCopyRestoreWhileHoldersRun(t *testing.T) {
	t.Parallel() // a server of its own; most of the test waits on real time
	coldrestore.Run(t, coldServer(t))
}

// TestColdCopyRestoreFreshHolder: a PostgreSQL put back on a copy taken
// before a running holder claimed its number, and a process started afresh
// claims that number at once (issue 25, item 6, on a lease table; the
// sequence is coldrestore.RunFresh's). Built with -tags
// snowfence_revert_notice (no wait before a claim's first grant) the two
// mint the same IDs.
func TestColdCopyRestoreFreshHolder(t *testing.T) {
	t.Parallel() // a server of its own; most of the test waits on real time
	coldrestore.RunFresh(t, coldServer(t))
}
