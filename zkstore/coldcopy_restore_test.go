package zkstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/internal/testkit/coldrestore"
	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// zkServer is a ZooKeeper of the test's own (zktest) with one store path,
// for coldrestore.Run: stopped, its data directories copied cold, put back.
type zkServer struct {
	e    *zktest.Ensemble
	path string

	mu     sync.Mutex
	copies map[string]*zktest.Copy
}

func newZKServer(t *testing.T, n int) *zkServer {
	return &zkServer{e: zktest.Start(t, n), path: newPath(t), copies: map[string]*zktest.Copy{}}
}

// Open returns a Store that Connect opened (its session is replaced when
// the restored servers refuse it), with the test bound of the sequence's
// slowest holders.
func (z *zkServer) Open(t *testing.T) lease.Store {
	t.Helper()
	s, err := zkstore.Connect(z.e.Servers(), 2*time.Second, zkstore.Config{Path: z.path, TestBound: testbound.Of(coldrestore.Slow.SelfFence),
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (z *zkServer) Stop(context.Context) error  { z.e.StopAll(); return nil }
func (z *zkServer) Start(context.Context) error { z.e.StartAll(); return nil }

func (z *zkServer) CopyData(context.Context) (string, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	name := fmt.Sprintf("copy%d", len(z.copies))
	z.copies[name] = z.e.CopyData()
	return name, nil
}

func (z *zkServer) Restore(_ context.Context, name string) error {
	z.mu.Lock()
	cp := z.copies[name]
	z.mu.Unlock()
	if cp == nil {
		return fmt.Errorf("no copy %q", name)
	}
	z.e.Restore(cp)
	z.e.StartAll()
	return nil
}

// TestColdCopyRestoreWhileHoldersRun: an ensemble of three put back on a
// cold copy of its data directories while holders run, and a new holder
// started at once (coldrestore.Run's sequence). Every ID minted is kept:
// none may be issued twice. With the store's signs of a restore undone
// (saw, sawScan and sawPathStat returning nil) and built with -tags
// snowfence_revert_notice (no wait before a claim's first grant) it mints
// duplicates; with the notice wait undone alone it passes.
func TestColdCopyRestoreWhileHoldersRun(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	coldrestore.Run(t, newZKServer(t, 3))
}

// TestColdCopyRestoreFreshHolder: a server put back on a copy taken before
// a running holder claimed its number, and a process started afresh
// claims that number at once (coldrestore.RunFresh's sequence): the
// notice window keeps the two apart. Built with -tags
// snowfence_revert_notice the two mint the same IDs.
func TestColdCopyRestoreFreshHolder(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	coldrestore.RunFresh(t, newZKServer(t, 1))
}
