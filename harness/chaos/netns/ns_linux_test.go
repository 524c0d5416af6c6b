//go:build linux

package netns_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence/harness/chaos/netns"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// runDir is where ip keeps the namespaces it names.
const runDir = "/var/run/netns"

// requireNetns skips t where network namespaces cannot be used, or fails it
// under CI=true, where a skip would hide scenario 8's machinery.
func requireNetns(t *testing.T) {
	t.Helper()
	if err := netns.Available(); err != nil {
		testenv.Missing(t, err.Error())
	}
}

// nsName is a namespace name unique to this test process.
func nsName(suffix string) string {
	return fmt.Sprintf("%snt%d-%s", netns.Prefix, os.Getpid(), suffix)
}

// newNS creates a namespace, deleted when t ends.
func newNS(t *testing.T, suffix string) *netns.NS {
	t.Helper()
	n, err := netns.New(nsName(suffix))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close %s: %v", n.Name, err)
		}
		if exists(n.Name) {
			t.Errorf("%s still exists after Close", n.Name)
		}
	})
	return n
}

// exists reports whether ip has a namespace called name.
func exists(name string) bool {
	_, err := os.Stat(filepath.Join(runDir, name))
	return err == nil
}

// nsID identifies the network namespace behind a path such as
// /proc/PID/ns/net or /var/run/netns/NAME.
func nsID(t *testing.T, path string) [2]uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return [2]uint64{st.Dev, st.Ino}
}

// child returns the test binary as a child process of mode inside n.
func child(n *netns.NS, mode string, env ...string) *exec.Cmd {
	cmd := n.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + mode}, env...)...)
	return cmd
}

// runDial runs the dial child inside n against addr and returns its exit
// code and output.
func runDial(t *testing.T, n *netns.NS, addr string) (int, string) {
	t.Helper()
	cmd := child(n, "dial", addrEnv+"="+addr)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dial child: %v", err)
	}
	waitCmd(t, cmd)
	return cmd.ProcessState.ExitCode(), out.String()
}

// waitCmd waits for cmd to exit, killing it after patience.
func waitCmd(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(patience):
		cmd.Process.Kill()
		<-done
		t.Fatalf("child %v did not exit in %v", cmd.Args, patience)
	}
}

// hostGreeter listens on host loopback and writes token and a newline to
// every connection, until t ends.
func hostGreeter(t *testing.T, token string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetWriteDeadline(time.Now().Add(patience))
			c.Write([]byte(token + "\n"))
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln
}

func TestNamespaceIsCutOffFromHostLoopback(t *testing.T) {
	requireNetns(t)
	n := newNS(t, "iso")
	token := fmt.Sprintf("greeting-%d", os.Getpid())
	host := hostGreeter(t, token)

	code, out := runDial(t, n, host.Addr().String())
	if code != exitRefused {
		t.Fatalf("child in %s dialing host %v: exit %d, %q; want exit %d (refused)", n.Name, host.Addr(), code, out, exitRefused)
	}

	ln, err := n.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen in namespace: %v", err)
	}
	p := startProxy(t, ln, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", host.Addr().String())
	})
	code, out = runDial(t, n, p.Addr().String())
	if want := "read: " + token + "\n"; code != 0 || out != want {
		t.Fatalf("child in %s dialing the proxy %v: exit %d, %q; want exit 0, %q", n.Name, p.Addr(), code, out, want)
	}
}

func TestHostReachesServerInNamespace(t *testing.T) {
	requireNetns(t)
	n := newNS(t, "srv")
	token := fmt.Sprintf("served-%d", os.Getpid())
	cmd := child(n, "serve", tokenEnv+"="+token)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start serve child: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close() // the child exits when its standard input ends
		waitCmd(t, cmd)
	})

	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
	}()
	var addr string
	select {
	case line := <-lines:
		var ok bool
		if addr, ok = strings.CutPrefix(strings.TrimSpace(line), "listening "); !ok {
			t.Fatalf("serve child said %q; want \"listening ADDR\"", line)
		}
	case <-time.After(patience):
		t.Fatalf("serve child said nothing in %v", patience)
	}
	// ip execs the command: the process started is the child itself.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid)); err != nil || got != exe {
		t.Fatalf("process %d runs %q (%v); want the child %q, not ip", cmd.Process.Pid, got, err, exe)
	}
	if got, want := nsID(t, fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)), nsID(t, filepath.Join(runDir, n.Name)); got != want {
		t.Fatalf("serve child (pid %d) is in namespace %v; want %s %v", cmd.Process.Pid, got, n.Name, want)
	}

	// Host loopback has no such server; at most something else on that port.
	if c, err := net.DialTimeout("tcp", addr, patience); err == nil {
		c.SetReadDeadline(time.Now().Add(quiet))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if strings.Contains(line, token) {
			t.Fatalf("host reached the server in %s at %s directly", n.Name, addr)
		}
	}

	p := newProxy(t, func(ctx context.Context) (net.Conn, error) {
		return n.DialContext(ctx, "tcp", addr)
	})
	c := dialProxy(t, p)
	expect(t, c, token+"\n")
	send(t, c, "echo me")
	expect(t, c, "echo me")
}

func TestCutInsideNamespace(t *testing.T) {
	requireNetns(t)
	n := newNS(t, "cut")
	u := newUpstream(t)
	ln, err := n.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen in namespace: %v", err)
	}
	p := startProxy(t, ln, u.dial)
	dial := func() net.Conn {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		c, err := n.DialContext(ctx, "tcp", p.Addr().String())
		if err != nil {
			t.Fatalf("DialContext in namespace: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	// The proxy's listener is in the namespace, not on host loopback.
	if c, err := net.DialTimeout("tcp", p.Addr().String(), patience); err == nil {
		c.Close()
	}
	u.acceptsNothing(t)

	c := dial()
	s := u.accept(t)
	send(t, c, "lease keepalive")
	expect(t, s, "lease keepalive")
	send(t, s, "ttl")
	expect(t, c, "ttl")

	p.Cut()
	send(t, c, "lease keepalive")
	silent(t, s, "etcd side during the cut")
	send(t, s, "ttl")
	silent(t, c, "holder side during the cut")
	held := dial()
	u.acceptsNothing(t)
	silent(t, held, "holder's new connection during the cut")

	p.Heal()
	closed(t, c, "holder's connection after Heal")
	closed(t, s, "etcd's connection after Heal")
	closed(t, held, "connection made during the cut, after Heal")
	c = dial()
	s = u.accept(t)
	send(t, c, "reconnected")
	expect(t, s, "reconnected")
}

func TestNoThreadLeftInNamespace(t *testing.T) {
	requireNetns(t)
	n := newNS(t, "thr")
	home := nsID(t, "/proc/self/ns/net")
	inside, err := n.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen in namespace: %v", err)
	}
	defer inside.Close()
	go func() {
		for {
			c, err := inside.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	outside, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer outside.Close()
	go func() {
		for {
			c, err := outside.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	// Namespaced sockets and host dials at once: a thread left in the
	// namespace would make some host dial fail or a namespaced one miss.
	var wg sync.WaitGroup
	errs := make(chan error, 64*20)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			var d net.Dialer
			for range 10 {
				var c net.Conn
				var err error
				if i%2 == 0 {
					c, err = n.DialContext(ctx, "tcp", inside.Addr().String())
				} else {
					c, err = d.DialContext(ctx, "tcp", outside.Addr().String())
				}
				if err != nil {
					errs <- err
					return
				}
				c.Close()
				if i%4 == 0 {
					ln, err := n.Listen("tcp", "127.0.0.1:0")
					if err != nil {
						errs <- err
						return
					}
					ln.Close()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("dial or listen: %v", err)
	}

	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		var st syscall.Stat_t
		path := filepath.Join("/proc/self/task", task.Name(), "ns/net")
		if err := syscall.Stat(path, &st); err != nil {
			continue // the thread ended meanwhile
		}
		if got := [2]uint64{st.Dev, st.Ino}; got != home {
			t.Errorf("thread %s is in namespace %v; want the process's %v", task.Name(), got, home)
		}
	}
}

func TestNewReplacesStaleNamespace(t *testing.T) {
	requireNetns(t)
	stale, err := netns.New(nsName("stale"))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer stale.Close()
	before := nsID(t, filepath.Join(runDir, stale.Name))
	fresh := newNS(t, "stale")
	if after := nsID(t, filepath.Join(runDir, fresh.Name)); after == before {
		t.Fatalf("second New(%q) kept namespace %v; want a new one", fresh.Name, before)
	}
	if err := stale.Close(); err != nil {
		t.Fatalf("Close of the replaced namespace: %v", err)
	}
	if !exists(fresh.Name) {
		t.Fatalf("Close of the replaced namespace deleted its successor %s", fresh.Name)
	}
	if _, err := stale.Listen("tcp", "127.0.0.1:0"); !errors.Is(err, netns.ErrClosed) {
		t.Errorf("Listen after Close = %v; want ErrClosed", err)
	}
	ln, err := fresh.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen in the new namespace: %v", err)
	}
	ln.Close()
}

func TestCleanupRemovesNamespaces(t *testing.T) {
	requireNetns(t)
	prefix := fmt.Sprintf("%sntclean%d-", netns.Prefix, os.Getpid())
	var left []*netns.NS
	for _, s := range []string{"a", "b"} {
		n, err := netns.New(prefix + s)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { n.Close() })
		left = append(left, n)
	}
	keep := newNS(t, "keep")
	if err := netns.Cleanup(prefix); err != nil {
		t.Fatalf("Cleanup(%q): %v", prefix, err)
	}
	for _, n := range left {
		if exists(n.Name) {
			t.Errorf("%s still exists after Cleanup(%q)", n.Name, prefix)
		}
		if err := n.Close(); err != nil {
			t.Errorf("Close of %s after Cleanup: %v; want nil", n.Name, err)
		}
	}
	if !exists(keep.Name) {
		t.Errorf("Cleanup(%q) deleted %s", prefix, keep.Name)
	}
	if err := netns.Cleanup(prefix); err != nil {
		t.Errorf("second Cleanup(%q): %v", prefix, err)
	}
}
