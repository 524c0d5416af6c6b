package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
)

// onClock is the embedded configuration of dir leasing number 5, on clk
// (the keeper's and the generator's), with the high-water mark raised to
// at when it is not zero.
func onClock(dir string, clk *fakeclock.Clock, at time.Time) node.Config {
	cfg := noStore(lease.Range{Lo: 5, Hi: 5})
	cfg.Open = node.EmbeddedEtcd(embedetcd.Config{Dir: dir, ClientURL: "http://127.0.0.1:0", HighWaterAt: at}, etcdstore.Config{})
	cfg.Generator.Clock = clk
	return cfg
}

// startOnClock runs node.Start, which waits on clk for the first grant to
// start, moving clk in 250 ms steps whenever both the keeper's loop and
// Start wait on it.
func startOnClock(t *testing.T, cfg node.Config, clk *fakeclock.Clock) (*node.Node, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	type result struct {
		n   *node.Node
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := node.Start(ctx, cfg)
		done <- result{n, err}
	}()
	for {
		bctx, bcancel := context.WithCancel(ctx)
		blocked := make(chan error, 1)
		go func() { blocked <- clk.BlockUntilWaiters(bctx, 2) }()
		select {
		case r := <-done:
			bcancel()
			<-blocked
			if r.n != nil {
				t.Cleanup(func() { r.n.Close(context.Background()) })
			}
			return r.n, r.err
		case err := <-blocked:
			bcancel()
			if err != nil {
				t.Fatalf("node.Start neither returned nor waited on the clock: %v", err)
			}
			clk.Advance(250 * time.Millisecond)
		}
	}
}

// mintFor mints 100 IDs every 2 s of clk for d, the keeper renewing
// between, and returns them.
func mintFor(t *testing.T, n *node.Node, clk *fakeclock.Clock, d time.Duration) []snowfence.ID {
	t.Helper()
	var ids []snowfence.ID
	for end := clk.Time().Add(d); ; {
		got, err := n.Generator.NextN(t.Context(), 100)
		if err != nil {
			t.Fatalf("NextN at %s: %v", clk.Time().Format(time.RFC3339Nano), err)
		}
		ids = append(ids, got...)
		if !clk.Time().Before(end) {
			return ids
		}
		if err := clk.BlockUntilWaiters(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Second)
		if err := clk.BlockUntilWaiters(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
	}
}

// copyDir copies the directory tree src to dst (a backup of a stopped
// etcd's data directory).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

// TestEmbeddedDataDirRestoredBehindTheClock is issue 25's item 7 on a real
// embedded etcd: a node runs, stops, and its data directory is copied (a
// backup); it runs again for a minute and stops; the directory is restored
// from the copy, and the node restarts with its clock a minute behind the
// last ID it issued (a VM restored with its disk, a clock reset at boot).
// The restored etcd holds the marks of the first run only, and the process
// that starts it claims at once: only the high-water file beside the
// directory remembers the second run. The restarted node issues above
// everything issued before. Fails with snowfence_revert_highwater: the
// restarted node mints IDs of the second run again.
func TestEmbeddedDataDirRestoredBehindTheClock(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir, backup := filepath.Join(root, "data"), filepath.Join(root, "backup")
	clk := fakeclock.New(time.Now().Truncate(time.Second))

	n, err := startOnClock(t, onClock(dir, clk, time.Time{}), clk)
	if err != nil {
		t.Fatal(err)
	}
	first := mintFor(t, n, clk, 10*time.Second)
	if err := n.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	copyDir(t, dir, backup)

	if n, err = startOnClock(t, onClock(dir, clk, time.Time{}), clk); err != nil {
		t.Fatal(err)
	}
	second := mintFor(t, n, clk, time.Minute)
	lastMs := n.Generator.LastIssued()
	if err := n.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	copyDir(t, backup, dir)
	// A minute behind the last ID, to the millisecond, so that a claim
	// starting at its clock plus the notice window meets IDs of the second
	// run.
	behind := fakeclock.New(time.UnixMilli(lastMs - 1).Add(-time.Minute))
	if n, err = startOnClock(t, onClock(dir, behind, time.Time{}), behind); err != nil {
		t.Fatal(err)
	}
	third := mintFor(t, n, behind, 10*time.Second)
	if ts := snowfence.V1().TimeOf(third[0]).UnixMilli(); ts < lastMs {
		t.Errorf("after the restore the first ID is stamped %s, below the end of the last ID issued before it, %s",
			lease.FormatMs(ts), lease.FormatMs(lastMs))
	}
	seen := map[snowfence.ID]bool{}
	dups := 0
	for _, ids := range [][]snowfence.ID{first, second, third} {
		for _, id := range ids {
			if seen[id] {
				dups++
			}
			seen[id] = true
		}
	}
	if dups > 0 {
		t.Errorf("%d IDs issued twice across the restore of the data directory", dups)
	}
	t.Logf("%d IDs in three runs; the restored run's first at %s, the second run's last before %s",
		len(seen), snowfence.V1().TimeOf(third[0]).Format(time.RFC3339Nano), time.UnixMilli(lastMs).UTC().Format(time.RFC3339Nano))
}

// TestEmbeddedHighWaterFileMissing: a data directory that holds etcd data
// but no high-water file beside it (restored or copied without it, or made
// before the file was kept) is refused, saying what to do; started with the
// mark set (HighWaterAt, serve --high-water-at), it issues from that mark.
// A new directory with no file starts at once.
func TestEmbeddedHighWaterFileMissing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	clk := fakeclock.New(time.Now().Truncate(time.Second))
	n, err := startOnClock(t, onClock(dir, clk, time.Time{}), clk)
	if err != nil {
		t.Fatalf("a new data directory with no high-water file: %v", err)
	}
	mintFor(t, n, clk, 2*time.Second)
	if err := n.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	file := dir + embedetcd.HighWaterSuffix
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("no high-water file beside the data directory: %v", err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	_, err = startOnClock(t, onClock(dir, clk, time.Time{}), clk)
	if !errors.Is(err, lease.ErrHighWater) || !strings.Contains(err.Error(), "--high-water-at") {
		t.Fatalf("data directory without its high-water file: %v, want ErrHighWater naming --high-water-at", err)
	}
	t.Logf("operator sees: %v", err)
	at := clk.Time().Add(time.Minute)
	if n, err = startOnClock(t, onClock(dir, clk, at), clk); err != nil {
		t.Fatalf("with the high-water mark set: %v", err)
	}
	id, err := n.Generator.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := snowfence.V1().TimeOf(id); got.Before(at) {
		t.Errorf("first ID at %s, before the mark set, %s", got, at)
	}
}
