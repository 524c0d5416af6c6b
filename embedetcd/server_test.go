package embedetcd_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/syncbuf"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestStartRestart starts an embedded etcd on a free port, measures the
// time to the first Put, leases a number from it, and starts it again on
// the same data directory: the mark survives, and the client-url file
// follows the running server.
func TestStartRestart(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	begin := time.Now()
	e, err := embedetcd.Start(ctxFor(t), embedetcd.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	cli, err := e.Client(ctxFor(t))
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	if _, err := cli.Put(ctxFor(t), "first", "put"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	t.Logf("Start to first Put: %v (endpoint %v)", time.Since(begin).Round(time.Millisecond), e.Endpoints())

	if got, err := embedetcd.ReadClientURL(dir); err != nil || got != e.Endpoints()[0] {
		t.Errorf("ReadClientURL = %q, %v; want %q", got, err, e.Endpoints()[0])
	}
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	l := mustExtend(t, s, leasetest.MustClaim(t, s, req("h", 0, 0, now)), now+4000)
	if err := s.Release(ctxFor(t), l, now+4000); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := embedetcd.ReadClientURL(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadClientURL after Close: %v, want ErrNotExist", err)
	}

	e2, err := embedetcd.Start(ctxFor(t), embedetcd.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		t.Fatalf("Start again: %v", err)
	}
	t.Cleanup(func() { e2.Close() })
	if got, _ := embedetcd.ReadClientURL(dir); got != e2.Endpoints()[0] {
		t.Errorf("ReadClientURL after restart = %q, want %q", got, e2.Endpoints()[0])
	}
	cli2, err := e2.Client(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli2.Close() })
	if l2 := leasetest.MustClaim(t, newStore(t, cli2, etcdstore.Config{}), req("h2", 0, 0, now)); l2.StartMs < now+4000 {
		t.Errorf("claim after restart starts at %d, want ≥ the mark %d kept in %s", l2.StartMs, now+4000, dir)
	}
}

// TestStartSecondOnSameDir: a second embedded etcd on a data directory
// in use fails at once with ErrDirInUse and leaves the first one's client-url file.
func TestStartSecondOnSameDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, err := embedetcd.Start(ctxFor(t), embedetcd.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	e2, err := embedetcd.Start(ctxFor(t), embedetcd.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"})
	if err == nil {
		e2.Close()
	}
	if !errors.Is(err, embedetcd.ErrDirInUse) {
		t.Fatalf("second Start on the same directory: %v, want ErrDirInUse", err)
	}
	if got, _ := embedetcd.ReadClientURL(dir); got != e.Endpoints()[0] {
		t.Errorf("ReadClientURL = %q, want the first server's %q", got, e.Endpoints()[0])
	}
}

// TestConfigInvalid: bad URLs and log levels fail before anything
// starts.
func TestConfigInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  embedetcd.Config
	}{
		{"no port", embedetcd.Config{ClientURL: "http://127.0.0.1"}},
		{"https", embedetcd.Config{ClientURL: "https://127.0.0.1:0"}},
		{"bad peer", embedetcd.Config{PeerURL: "127.0.0.1:2380"}},
		{"log level", embedetcd.Config{LogLevel: "chatty"}},
	} {
		tc.cfg.Dir = t.TempDir()
		if _, err := embedetcd.Start(ctxFor(t), tc.cfg); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%s: Start = %v, want ErrInvalid", tc.name, err)
		}
	}
}

// TestLogs: at the default level a clean start, use and close log
// nothing; at info, etcd's lines reach the configured logger.
func TestLogs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level string
		quiet bool
	}{{"", true}, {"info", false}} {
		var buf syncbuf.Buffer
		lg := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		e, err := embedetcd.Start(ctxFor(t), embedetcd.Config{
			Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0", LogLevel: tc.level, Logger: lg,
		})
		if err != nil {
			t.Fatalf("Start(level %q): %v", tc.level, err)
		}
		cli, err := e.Client(ctxFor(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Put(ctxFor(t), "k", "v"); err != nil {
			t.Fatal(err)
		}
		cli.Close()
		e.Close()
		out := buf.String()
		if tc.quiet && out != "" {
			t.Errorf("level %q logged:\n%s", tc.level, out)
		}
		if !tc.quiet && !strings.Contains(out, "component=etcd") {
			t.Errorf("level %q logged no etcd lines:\n%s", tc.level, out)
		}
	}
}

// BenchmarkStart measures Start to the first acknowledged Put, on a fresh
// data directory (fsync on, as in production).
func BenchmarkStart(b *testing.B) {
	var total time.Duration
	n := 0
	for b.Loop() {
		n++
		begin := time.Now()
		e, err := embedetcd.Start(b.Context(), embedetcd.Config{Dir: b.TempDir(), ClientURL: "http://127.0.0.1:0"})
		if err != nil {
			b.Fatal(err)
		}
		cli, err := e.Client(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cli.Put(b.Context(), "k", "v"); err != nil {
			b.Fatal(err)
		}
		total += time.Since(begin)
		b.StopTimer()
		cli.Close()
		e.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms-to-first-put")
}
