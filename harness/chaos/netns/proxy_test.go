package netns_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/harness/chaos/netns"
)

// newProxy starts a proxy on host loopback, closed when t ends.
func newProxy(t *testing.T, dial func(context.Context) (net.Conn, error)) *netns.Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return startProxy(t, ln, dial)
}

// startProxy starts a proxy on ln, closed when t ends.
func startProxy(t *testing.T, ln net.Listener, dial func(context.Context) (net.Conn, error)) *netns.Proxy {
	t.Helper()
	p, err := netns.NewProxy(ln, dial)
	if err != nil {
		ln.Close()
		t.Fatalf("NewProxy: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

func TestNewProxyRejectsNil(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	dial := func(context.Context) (net.Conn, error) { return nil, errors.New("unused") }
	if p, err := netns.NewProxy(nil, dial); err == nil {
		p.Close()
		t.Errorf("NewProxy(nil, dial): no error")
	}
	if p, err := netns.NewProxy(ln, nil); err == nil {
		p.Close()
		t.Errorf("NewProxy(ln, nil): no error")
	}
}

func TestProxyForwardsBothWays(t *testing.T) {
	u := newUpstream(t)
	p := newProxy(t, u.dial)
	c := dialProxy(t, p)
	s := u.accept(t)

	send(t, c, "hello")
	expect(t, s, "hello")
	send(t, s, "world")
	expect(t, c, "world")

	// An end of stream crosses as a half-close: the other way stays open.
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatalf("CloseWrite: %v", err)
	}
	s.SetReadDeadline(time.Now().Add(patience))
	if n, err := s.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("upstream read after client half-close: %d bytes, %v; want EOF", n, err)
	}
	send(t, s, "bye")
	expect(t, c, "bye")
	s.Close()
	closed(t, c, "client after upstream closed")
}

func TestProxyCutHoldsAndHealCloses(t *testing.T) {
	u := newUpstream(t)
	p := newProxy(t, u.dial)
	old := dialProxy(t, p) // carries bytes across the cut
	oldSrv := u.accept(t)
	fin := dialProxy(t, p) // carries ends of stream across the cut
	finSrv := u.accept(t)
	send(t, old, "a")
	expect(t, oldSrv, "a")
	send(t, fin, "b")
	expect(t, finSrv, "b")

	p.Cut()
	p.Cut() // idempotent
	send(t, old, "to upstream")
	silent(t, oldSrv, "upstream side of an existing connection during the cut")
	send(t, oldSrv, "to client")
	silent(t, old, "client side of an existing connection during the cut")
	fin.(*net.TCPConn).CloseWrite()
	silent(t, finSrv, "upstream side after the client half-closed during the cut")
	finSrv.(*net.TCPConn).CloseWrite()
	silent(t, fin, "client side after the upstream half-closed during the cut")

	held := dialProxy(t, p) // accepted: the dial succeeds
	send(t, held, "during cut")
	u.acceptsNothing(t)
	silent(t, held, "connection made during the cut")

	p.Heal()
	closed(t, old, "client side of an existing connection after Heal")
	closed(t, oldSrv, "upstream side of an existing connection after Heal")
	closed(t, fin, "client side of a half-closed connection after Heal")
	closed(t, finSrv, "upstream side of a half-closed connection after Heal")
	closed(t, held, "connection made during the cut, after Heal")

	c := dialProxy(t, p)
	s := u.accept(t)
	send(t, c, "after heal")
	expect(t, s, "after heal")
	p.Heal() // idempotent: the working connection stays up
	send(t, s, "still up")
	expect(t, c, "still up")
}

// watchedConn records when a write in progress started.
type watchedConn struct {
	net.Conn
	since atomic.Int64 // Unix nanoseconds; 0 when no write is in progress
}

func (w *watchedConn) Write(b []byte) (int, error) {
	w.since.Store(time.Now().UnixNano())
	defer w.since.Store(0)
	return w.Conn.Write(b)
}

// watchedListener wraps the connections it accepts in watchedConns.
type watchedListener struct {
	net.Listener
	conns chan *watchedConn
}

func (l *watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	w := &watchedConn{Conn: c}
	l.conns <- w
	return w, nil
}

func TestProxyCutInterruptsBlockedWrite(t *testing.T) {
	for _, toClient := range []bool{false, true} {
		name := map[bool]string{false: "to upstream", true: "to client"}[toClient]
		t.Run(name, func(t *testing.T) { testCutInterruptsBlockedWrite(t, toClient) })
	}
}

// testCutInterruptsBlockedWrite floods one direction whose reader never
// reads until the proxy's write blocks, then cuts: Cut must return, and
// nothing more may cross.
func testCutInterruptsBlockedWrite(t *testing.T, toClient bool) {
	u := newUpstream(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	wln := &watchedListener{Listener: ln, conns: make(chan *watchedConn, 1)}
	dialed := make(chan *watchedConn, 1)
	p := startProxy(t, wln, func(ctx context.Context) (net.Conn, error) {
		c, err := u.dial(ctx)
		if err != nil {
			return nil, err
		}
		w := &watchedConn{Conn: c}
		dialed <- w
		return w, nil
	})
	c := dialProxy(t, p)
	s := u.accept(t)
	writer, reader, w := c, s, <-dialed
	if toClient {
		writer, reader, w = s, c, <-wln.conns
	}

	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		chunk := make([]byte, 1<<20)
		for range 512 {
			writer.SetWriteDeadline(time.Now().Add(patience))
			if _, err := writer.Write(chunk); err != nil {
				return
			}
		}
	}()
	waitFor(t, "a proxy write blocked for 200ms", func() bool {
		since := w.since.Load()
		return since != 0 && time.Since(time.Unix(0, since)) > 200*time.Millisecond
	})

	cut := make(chan struct{})
	go func() {
		p.Cut()
		close(cut)
	}()
	select {
	case <-cut:
	case <-time.After(patience):
		t.Fatalf("Cut did not return in %v with a write blocked", patience)
	}

	// What crossed before the cut may still be buffered; then nothing more.
	buf := make([]byte, 1<<16)
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatalf("reader kept receiving after the cut")
		}
		reader.SetReadDeadline(time.Now().Add(quiet))
		_, err := reader.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatalf("read after the cut: %v; want the connection open", err)
		}
	}
	silent(t, reader, "reader after draining")
	writer.Close()
	<-wrote
}

func TestProxyCutDuringDial(t *testing.T) {
	u := newUpstream(t)
	entered := make(chan struct{})
	release := make(chan struct{})
	p := newProxy(t, func(ctx context.Context) (net.Conn, error) {
		close(entered)
		<-release
		return u.dial(ctx)
	})
	c := dialProxy(t, p)
	select {
	case <-entered:
	case <-time.After(patience):
		t.Fatalf("the proxy did not dial in %v", patience)
	}
	p.Cut()
	close(release)
	s := u.accept(t)
	send(t, c, "during cut")
	silent(t, s, "upstream of a dial that returned during the cut")
	send(t, s, "during cut")
	silent(t, c, "client whose dial returned during the cut")
	p.Heal()
	closed(t, c, "client after Heal")
	closed(t, s, "upstream after Heal")
}

func TestProxyCloseWaitsForDials(t *testing.T) {
	entered := make(chan struct{})
	returned := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	p, err := netns.NewProxy(ln, func(ctx context.Context) (net.Conn, error) {
		close(entered)
		<-ctx.Done()
		close(returned)
		return nil, ctx.Err()
	})
	if err != nil {
		t.Fatalf("NewProxy: %v", err)
	}
	dialProxy(t, p)
	select {
	case <-entered:
	case <-time.After(patience):
		t.Fatalf("the proxy did not dial in %v", patience)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-returned:
	default:
		t.Fatalf("Close returned before the dial in progress did")
	}
}

func TestProxyDialFailureClosesClient(t *testing.T) {
	p := newProxy(t, func(context.Context) (net.Conn, error) {
		return nil, errors.New("no upstream")
	})
	closed(t, dialProxy(t, p), "client whose upstream dial failed")
}

func TestProxyCloseLeavesNothing(t *testing.T) {
	u := newUpstream(t)
	base := runtime.NumGoroutine()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	p, err := netns.NewProxy(ln, u.dial)
	if err != nil {
		t.Fatalf("NewProxy: %v", err)
	}
	live := dialProxy(t, p)
	liveSrv := u.accept(t)
	send(t, live, "x")
	expect(t, liveSrv, "x")
	p.Cut()
	held := dialProxy(t, p)
	send(t, held, "y")
	u.acceptsNothing(t)

	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	noLeak(t, base)
	closed(t, live, "client of a live connection after Close")
	closed(t, liveSrv, "upstream of a live connection after Close")
	closed(t, held, "held connection after Close")
	if c, err := net.DialTimeout("tcp", p.Addr().String(), patience); err == nil {
		c.Close()
		t.Errorf("dial %v after Close: connected; want refused", p.Addr())
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v; want nil", err)
	}
	p.Cut()
	p.Heal()
}

func TestProxyCutHealUnderLoad(t *testing.T) {
	u := newUpstream(t)
	base := runtime.NumGoroutine()
	var echoes sync.WaitGroup
	echoes.Add(1)
	go func() {
		defer echoes.Done()
		for c := range u.conns {
			echoes.Add(1)
			go func() {
				defer echoes.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(patience))
				io.Copy(c, c)
			}()
		}
	}()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	p, err := netns.NewProxy(ln, u.dial)
	if err != nil {
		t.Fatalf("NewProxy: %v", err)
	}
	stop := make(chan struct{})
	var clients sync.WaitGroup
	var tries, echoed atomic.Int64
	end := time.Now().Add(patience)
	for range 6 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			buf := make([]byte, 4)
			for range 100000 {
				select {
				case <-stop:
					return
				default:
				}
				if time.Now().After(end) {
					return
				}
				tries.Add(1)
				c, err := net.DialTimeout("tcp", p.Addr().String(), time.Second)
				if err != nil {
					continue
				}
				c.SetDeadline(time.Now().Add(20 * time.Millisecond))
				c.Write([]byte("ping"))
				if _, err := io.ReadFull(c, buf); err == nil && string(buf) == "ping" {
					echoed.Add(1)
				}
				c.Close()
			}
		}()
	}
	// Every round has echoes before the cut and tries during it.
	for range 20 {
		e := echoed.Load()
		waitFor(t, "an echo through the healed proxy", func() bool { return echoed.Load() > e })
		p.Cut()
		n := tries.Load()
		waitFor(t, "tries during the cut", func() bool { return tries.Load() > n+6 })
		p.Heal()
	}
	close(stop)
	clients.Wait()

	c := dialProxy(t, p)
	send(t, c, "after load")
	expect(t, c, "after load")
	c.Close()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	u.ln.Close()
	<-u.done
	close(u.conns)
	echoes.Wait()
	noLeak(t, base-1) // the upstream's accept loop has ended too
}
