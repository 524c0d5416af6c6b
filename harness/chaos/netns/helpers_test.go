package netns_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/snowfence/snowfence/harness/chaos/netns"
)

// quiet is how long a test watches for bytes that must not arrive.
const quiet = 300 * time.Millisecond

// patience bounds every wait for something that must happen.
const patience = 10 * time.Second

// upstream is a TCP server on host loopback that hands each accepted
// connection to the test.
type upstream struct {
	ln    net.Listener
	conns chan net.Conn
	done  chan struct{} // closed when the accept loop ends
}

// newUpstream starts an upstream, closed with its connections when t ends.
func newUpstream(t *testing.T) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	u := &upstream{ln: ln, conns: make(chan net.Conn, 64), done: make(chan struct{})}
	go func() {
		defer close(u.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.conns <- c
		}
	}()
	t.Cleanup(func() {
		u.close()
		<-u.done
	})
	return u
}

// close stops accepting and closes the connections not taken yet.
func (u *upstream) close() {
	u.ln.Close()
	for {
		select {
		case c, ok := <-u.conns:
			if !ok {
				return
			}
			c.Close()
		default:
			return
		}
	}
}

// dial returns a dial function for a proxy in front of u.
func (u *upstream) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", u.ln.Addr().String())
}

// accept returns the next connection u accepted.
func (u *upstream) accept(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-u.conns:
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(patience):
		t.Fatalf("upstream accepted no connection in %v", patience)
		return nil
	}
}

// acceptsNothing fails t if u accepts a connection within quiet.
func (u *upstream) acceptsNothing(t *testing.T) {
	t.Helper()
	select {
	case c := <-u.conns:
		c.Close()
		t.Fatalf("upstream accepted a connection from %v; want none", c.RemoteAddr())
	case <-time.After(quiet):
	}
}

// dialProxy connects to p, closed when t ends.
func dialProxy(t *testing.T, p *netns.Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr().String(), patience)
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// send writes msg to c.
func send(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(patience))
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
}

// expect reads len(want) bytes from c and compares them with want.
func expect(t *testing.T, c net.Conn, want string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(patience))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read %q: %v", want, err)
	}
	if string(got) != want {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// silent fails t unless a read on c times out after quiet with no byte:
// the connection is open, but nothing arrives.
func silent(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(quiet))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %q, %v; want a timeout with nothing read (open, but no bytes)", what, buf[:n], err)
	}
}

// closed fails t unless c ends within patience: end of stream or reset,
// with nothing read before.
func closed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(patience))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if n > 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %q, %v; want the connection closed", what, buf[:n], err)
	}
}

// noLeak fails t unless the number of goroutines drops back to base within
// patience.
func noLeak(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor polls cond until it holds, failing t after patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, patience)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
