//go:build linux

package etcdproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/snowfence/snowfence/internal/testkit/syncbuf"
)

// Environment variables that turn the test binary into a child process.
const (
	// memberEnv set to 1 makes the test binary a member: MemberMain with
	// its arguments.
	memberEnv = "SNOWFENCE_ETCDPROC_MEMBER"
	// parentEnv set to a directory makes the test binary a harness that
	// starts a cluster there, prints its members' pids and waits to be
	// killed (see TestMembersDieWithParent).
	parentEnv = "SNOWFENCE_ETCDPROC_PARENT"
)

func TestMain(m *testing.M) {
	if os.Getenv(memberEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := MemberMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(parentEnv); dir != "" {
		os.Exit(parentMain(dir))
	}
	os.Exit(m.Run())
}

// parentMain starts a cluster in dir, prints "pids <pid> …" and waits for
// its own death (or gives up after a minute).
func parentMain(dir string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{Dir: dir, Command: memberCommand, Stderr: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pids := make([]string, c.Size())
	for i := range pids {
		pids[i] = fmt.Sprint(c.Pid(i))
	}
	fmt.Println("pids", strings.Join(pids, " "))
	<-ctx.Done()
	c.Close()
	return 2
}

// memberCommand re-executes the test binary as a member.
func memberCommand(args ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), memberEnv+"=1")
	return cmd
}

// startCluster starts a 3-member cluster in the test's TempDir, logs how
// long that took, closes it when the test ends and logs the members'
// stderr if the test failed.
func startCluster(t testing.TB) *Cluster {
	t.Helper()
	stderr := &syncbuf.Tail{Limit: 64 << 10}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("members' stderr:\n%s", stderr)
		}
	})
	t0 := time.Now()
	c, err := Start(t.Context(), Config{Dir: t.TempDir(), Command: memberCommand, Stderr: stderr})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("3-member cluster started in %v", time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// newClient returns a client of eps, closed when the test ends.
func newClient(t testing.TB, eps ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("client of %v: %v", eps, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// timeout returns a context that ends after d or with the test.
func timeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// put writes key=value and returns the revision of the write.
func put(t testing.TB, cli *clientv3.Client, key, value string) int64 {
	t.Helper()
	resp, err := cli.Put(timeout(t, 10*time.Second), key, value)
	if err != nil {
		t.Fatalf("Put %s=%s: %v", key, value, err)
	}
	return resp.Header.Revision
}

// get reads key and returns its value and the response's revision.
func get(t testing.TB, cli *clientv3.Client, key string, opts ...clientv3.OpOption) (string, int64) {
	t.Helper()
	resp, err := cli.Get(timeout(t, 10*time.Second), key, opts...)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("Get %s: %d keys, want 1", key, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value), resp.Header.Revision
}

// gone reports whether process pid is dead: no such process, or a zombie
// nobody has reaped yet.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	state, err := procState(pid)
	return err != nil || state == 'Z'
}

// median returns the median of ds (which it sorts).
func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}
