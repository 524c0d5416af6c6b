package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/snowfence/snowfence/internal/testkit/spawn"
)

// DebianEtcd is where Debian's etcd-server package installs the etcd
// executable.
const DebianEtcd = "/usr/bin/etcd"

// A Binary is a single-member etcd cluster run from an executable, for
// tests against an independently built etcd.
type Binary struct {
	path     string
	endpoint string
	version  string
	p        *spawn.Proc
}

// binaryOutput is how much of the executable's output a Binary keeps for
// its errors: at --log-level error, all of it.
const binaryOutput = 64 << 10

// StartBinary starts the etcd executable at path as a one-member cluster on
// free loopback ports, with its data in the test's TempDir, waits until it
// serves, and stops it when the test ends. If there is no executable at
// path, the test is skipped with a hint to install it — or fails, when the
// environment variable CI is "true", so CI cannot pass without running it.
func StartBinary(tb testing.TB, path string) *Binary {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("etcdtest: no etcd executable at %s (%v); install Debian's: apt-get install -y etcd-server", path, err)
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	version := binaryVersion(path)
	root := tb.TempDir()
	var err error
	for try := range attempts {
		var b *Binary
		b, err = startBinary(path, filepath.Join(root, fmt.Sprintf("try%d", try)))
		if err == nil {
			b.version = version
			tb.Cleanup(b.Stop)
			return b
		}
		if !isAddrInUse(err) {
			break
		}
	}
	tb.Fatalf("etcdtest.StartBinary(%s): %v", path, err)
	return nil
}

// startBinary makes one attempt at starting the executable in dir.
func startBinary(path, dir string) (*Binary, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	client, peer := loopbackURL(ports[0]), loopbackURL(ports[1])
	b := &Binary{path: path, endpoint: client.String()}
	cmd := exec.Command(path,
		"--name", "bin0",
		"--data-dir", dir,
		"--listen-client-urls", client.String(),
		"--advertise-client-urls", client.String(),
		"--listen-peer-urls", peer.String(),
		"--initial-advertise-peer-urls", peer.String(),
		"--initial-cluster", "bin0="+peer.String(),
		"--initial-cluster-token", "etcdtest-"+randomHex(),
		"--logger", "zap",
		"--log-level", "error",
		"--unsafe-no-fsync",
	)
	// Its stdout and stderr both go to the tail.
	if b.p, err = spawn.Start(cmd, spawn.Config{Name: "etcd", TailBytes: binaryOutput}); err != nil {
		return nil, fmt.Errorf("etcdtest: start %s: %w", path, err)
	}
	if err := b.waitServing(); err != nil {
		b.Stop()
		return nil, err
	}
	return b, nil
}

// waitServing polls the executable with a linearizable read until it
// answers, it exits, or readyTimeout passes.
func (b *Binary) waitServing() error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{b.endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcdtest: client of %s: %w", b.endpoint, err)
	}
	defer cli.Close()
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := cli.Get(ctx, "etcdtest-ready")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-b.p.Done():
			out := b.p.Tail()
			if strings.Contains(out, "address already in use") {
				return fmt.Errorf("etcdtest: %s exited: %w: %s", b.path, syscall.EADDRINUSE, out)
			}
			return fmt.Errorf("etcdtest: %s exited: %s", b.path, out)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcdtest: %s not serving after %v: %v\n%s", b.path, readyTimeout, err, b.p.Tail())
		}
		time.Sleep(20 * time.Millisecond) // poll: only etcd can finish starting
	}
}

// Endpoints returns the server's client URL.
func (b *Binary) Endpoints() []string { return []string{b.endpoint} }

// Version is the first line of the executable's --version output.
func (b *Binary) Version() string { return b.version }

// Client returns a client of the server; it is closed when the test ends.
func (b *Binary) Client(tb testing.TB) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: b.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatalf("etcdtest: client of %s: %v", b.endpoint, err)
	}
	tb.Cleanup(func() { cli.Close() })
	return cli
}

// Stop terminates the server (SIGTERM, then SIGKILL after 10 s) and waits
// for it to be reaped. StartBinary arranges for it to run when the test
// ends.
func (b *Binary) Stop() {
	b.p.Stop(10 * time.Second) // how etcd ended does not matter here
}

// Kill crashes the server: SIGKILL, so etcd gets no clean shutdown and its
// clients no goodbye, then waits (bounded) for it to be reaped. Killing a
// server that has exited does nothing; Stop after Kill does nothing either.
func (b *Binary) Kill() error { return b.p.Kill() }

// binaryVersion runs `path --version` and returns its first line.
func binaryVersion(path string) string {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "unknown (" + strings.TrimSpace(string(ee.Stderr)) + ")"
		}
		return "unknown (" + err.Error() + ")"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}
