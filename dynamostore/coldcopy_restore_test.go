package dynamostore_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/internal/testkit/coldrestore"
	"github.com/snowfence/snowfence/internal/testkit/dynashim"
	"github.com/snowfence/snowfence/internal/testkit/storeproc"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/lease"
)

// dynaliteServer is a private dynalite with its tables on disk (--path;
// the install scripts/services/dynalite.sh makes), behind a shim of its
// own, with one lease table, for coldrestore.Run.
type dynaliteServer struct {
	*storeproc.Dynalite
	shim  *dynashim.Shim
	table string
}

func (d dynaliteServer) Open(t *testing.T) lease.Store {
	t.Helper()
	s, err := dynamostore.Connect(t.Context(), dynamostore.ClientConfig{
		Endpoint: d.shim.URL(), AWSRegion: "us-east-1", AccessKeyID: "test", SecretAccessKey: "test",
	}, dynamostore.Config{Table: d.table, RequestTimeout: time.Second, TestBound: testbound.Of(coldrestore.Slow.SelfFence),
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Stop kills dynalite: it keeps what it acknowledged on disk.
func (d dynaliteServer) Stop(context.Context) error { return d.Kill() }

// coldServer starts a private dynalite (behind the shim) with one empty
// lease table.
func coldServer(t *testing.T) dynaliteServer {
	t.Helper()
	dl, err := storeproc.StartDynalite(t.Context())
	if errors.Is(err, storeproc.ErrMissing) {
		testenv.Missing(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dl.Close() })
	shim, err := dynashim.Start(dl.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shim.Close() })
	srv := dynaliteServer{Dynalite: dl, shim: shim, table: "leases"}
	if err := srv.Open(t).(*dynamostore.Store).CreateTable(t.Context()); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestColdCopyRestoreWhileHoldersRun: dynalite put back on a cold copy of
// its data directory — the same tables with the same TableIds — while
// holders run, and a new holder started at once (issue 25, item 5; the
// sequence is coldrestore.Run's). Every ID minted is kept: none may be
// issued twice. Built with -tags
// snowfence_revert_tablerestore,snowfence_revert_notice (the items' signs of
// a restore ignored, and no wait before a claim's first grant, which covers
// the sequence a second time) it mints duplicates.
func TestColdCopyRestoreWhileHoldersRun(t *testing.T) {
	t.Parallel() // a server of its own; most of the test waits on real time
	coldrestore.Run(t, coldServer(t))
}

// TestColdCopyRestoreFreshHolder: dynalite put back on a copy taken before
// a running holder claimed its number, and a process started afresh claims
// that number at once (issue 25, item 6, on a lease table; the sequence is
// coldrestore.RunFresh's). Built with -tags snowfence_revert_notice (no
// wait before a claim's first grant) the two mint the same IDs.
func TestColdCopyRestoreFreshHolder(t *testing.T) {
	t.Parallel() // a server of its own; most of the test waits on real time
	coldrestore.RunFresh(t, coldServer(t))
}
