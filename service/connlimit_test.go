package service

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/node"
)

// The connection caps on real loopback listeners. A bound like
// failWithin only turns a hang (a connection neither admitted nor refused)
// into a failure; nothing waits on time to synchronise.
const failWithin = 10 * time.Second

// newLimits is a connLimits with caps, its metrics on a fresh registry.
func newLimits(t *testing.T, caps connCaps) *connLimits {
	t.Helper()
	m, err := newConnMetrics(prometheus.NewRegistry(), caps)
	if err != nil {
		t.Fatal(err)
	}
	return newConnLimits(caps, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// limited is a listener under cl, accepting in the background.
type limited struct {
	l        *limitListener
	addr     string
	accepted chan *limitedConn
}

func listenLimited(t *testing.T, cl *connLimits, name string, tls bool) *limited {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := &limited{l: cl.listen(ln, name, tls), addr: ln.Addr().String(), accepted: make(chan *limitedConn, 100)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ll.l.Accept()
			if err != nil {
				return
			}
			ll.accepted <- c.(*limitedConn)
		}
	}()
	t.Cleanup(func() {
		ll.l.Close()
		<-done
		for {
			select {
			case c := <-ll.accepted:
				c.Close()
			default:
				return
			}
		}
	})
	return ll
}

// dial connects to ll from the loopback address from ("": 127.0.0.1).
func (ll *limited) dial(t *testing.T, from string) net.Conn {
	t.Helper()
	d := net.Dialer{}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", ll.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// admitted is the server's side of the next connection admitted.
func (ll *limited) admitted(t *testing.T) *limitedConn {
	t.Helper()
	select {
	case c := <-ll.accepted:
		return c
	case <-time.After(failWithin):
		t.Fatalf("no connection admitted within %s", failWithin)
		return nil
	}
}

// readAll reads what the server sends on c until it closes it.
func readAll(t *testing.T, c net.Conn) ([]byte, error) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(failWithin))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server neither refused nor closed the connection within %s (read %q)", failWithin, b)
	}
	return b, err
}

// refused checks that the server answered c the 503 for reason and closed it.
func refused(t *testing.T, c net.Conn, reason string) {
	t.Helper()
	// A refusal answers a request (TestRefusalAnswersTheRequest).
	c.Write([]byte("GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"))
	b, err := readAll(t, c)
	if err != nil {
		t.Fatalf("reading the refusal: %v (read %q)", err, b)
	}
	if !bytes.Equal(b, refusals[reason]) {
		t.Fatalf("refused with %q, want %q", b, refusals[reason])
	}
}

// closedSilently checks that the server closed c without writing a byte.
func closedSilently(t *testing.T, c net.Conn) {
	t.Helper()
	if b, _ := readAll(t, c); len(b) != 0 {
		t.Fatalf("the server wrote %q; want the connection closed without a byte", b)
	}
}

// shed reads a listener's refusals for reason.
func shed(cl *connLimits, listener, reason string) float64 {
	return testutil.ToFloat64(cl.metrics.refused.WithLabelValues(listener, reason))
}

// The 503 a plain listener refuses with is a complete HTTP/1.1 response
// that closes the connection, with the server's error body.
func TestRefusalIsAClearHTTP503(t *testing.T) {
	for _, reason := range []string{shedTotal, shedPerPeer} {
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(refusals[reason])), nil)
		if err != nil {
			t.Fatalf("%s: %v", reason, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: the body: %v", reason, err)
		}
		var e struct {
			Error struct{ Code, Message, Reason string }
		}
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("%s: body %q: %v", reason, body, err)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close || resp.Header.Get("Retry-After") != "1" ||
			resp.Header.Get("Content-Type") != "application/json" || e.Error.Code != "unavailable" || e.Error.Reason != ReasonTooManyConnections || e.Error.Message == "" {
			t.Errorf("%s: %d %v %s", reason, resp.StatusCode, resp.Header, body)
		}
	}
}

// Over its cap a listener refuses a new connection with the 503 and keeps
// accepting: once one closes, the next is admitted.
func TestConnCapPerListener(t *testing.T) {
	cl := newLimits(t, connCaps{budget: 100, perListener: 2, perPeer: 100})
	ll := listenLimited(t, cl, "api", false)
	ll.dial(t, "")
	a := ll.admitted(t)
	ll.dial(t, "")
	ll.admitted(t)
	refused(t, ll.dial(t, ""), shedTotal)
	a.Close()
	ll.dial(t, "")
	ll.admitted(t)
	if n := shed(cl, "api", shedTotal); n != 1 {
		t.Errorf("refused total %v, want 1", n)
	}
	if n := testutil.ToFloat64(cl.metrics.open.WithLabelValues("api")); n != 2 {
		t.Errorf("open connections %v, want 2", n)
	}
}

// One address is capped on its own; another is still admitted.
func TestConnCapPerPeer(t *testing.T) {
	cl := newLimits(t, connCaps{budget: 100, perListener: 10, perPeer: 2})
	ll := listenLimited(t, cl, "api", false)
	for range 2 {
		ll.dial(t, "127.0.0.1")
		ll.admitted(t)
	}
	refused(t, ll.dial(t, "127.0.0.1"), shedPerPeer)
	ll.dial(t, "127.0.0.2")
	ll.admitted(t)
	if n := shed(cl, "api", shedPerPeer); n != 1 {
		t.Errorf("refused per peer %v, want 1", n)
	}
}

// On a TLS listener a refusal closes the connection without a byte: the
// caller sent a ClientHello, not HTTP.
func TestConnRefusalOnTLSCloses(t *testing.T) {
	cl := newLimits(t, connCaps{budget: 100, perListener: 1, perPeer: 100})
	ll := listenLimited(t, cl, "api", true)
	ll.dial(t, "")
	ll.admitted(t)
	closedSilently(t, ll.dial(t, ""))
	if n := shed(cl, "api", shedTotal); n != 1 {
		t.Errorf("refused total %v, want 1", n)
	}
}

// Over a cap a new connection takes the place of the longest idle one —
// of the same address, for the per-peer cap — and refused only when none
// is idle; a connection serving a request is never closed for it.
func TestConnCapEvictsIdle(t *testing.T) {
	cl := newLimits(t, connCaps{budget: 100, perListener: 3, perPeer: 2})
	ll := listenLimited(t, cl, "api", false)
	other := ll.dial(t, "127.0.0.2")
	o := ll.admitted(t)
	first := ll.dial(t, "127.0.0.1")
	a := ll.admitted(t)
	second := ll.dial(t, "127.0.0.1")
	b := ll.admitted(t)
	cl.track(o, http.StateIdle) // idle longest, but another address's
	cl.track(a, http.StateIdle)
	cl.track(tls.Server(b, &tls.Config{}), http.StateIdle) // as the ConnState hook sees a TLS connection
	cl.track(a, http.StateActive)                          // a request on a: no longer idle
	cl.track(a, http.StateIdle)                            // idle again, now after b

	// The per-peer cap: 127.0.0.1's longest idle is b.
	ll.dial(t, "127.0.0.1")
	c := ll.admitted(t)
	closedSilently(t, second)
	if n := shed(cl, "api", shedEvictedIdle); n != 1 {
		t.Fatalf("evicted %v, want 1", n)
	}
	// The listener's cap: the longest idle of all is o.
	ll.dial(t, "127.0.0.3")
	ll.admitted(t)
	closedSilently(t, other)
	// Busy ones are not evicted: a (idle) goes, then c (new) stays.
	cl.track(c, http.StateActive)
	ll.dial(t, "127.0.0.4")
	ll.admitted(t)
	closedSilently(t, first)
	refused(t, ll.dial(t, "127.0.0.5"), shedTotal)
	if n := shed(cl, "api", shedEvictedIdle); n != 3 {
		t.Errorf("evicted %v, want 3", n)
	}
}

// Two listeners share the budget beyond their floors: each is sure of its
// floor, and the shared part, once used, is freed for one by closing the
// other's idle connection.
func TestConnBudgetSharedAcrossListeners(t *testing.T) {
	caps := connCaps{budget: 4, perListener: 4, perPeer: 4, floor: 1} // shared: 4 − 2×1
	cl := newLimits(t, caps)
	api := listenLimited(t, cl, "api", true)
	admin := listenLimited(t, cl, "admin", false)
	var held []*limitedConn
	for range 3 { // the floor and the whole shared part
		api.dial(t, "")
		held = append(held, api.admitted(t))
	}
	closedSilently(t, api.dial(t, ""))
	admin.dial(t, "") // its floor
	admin.admitted(t)
	refused(t, admin.dial(t, ""), shedTotal)

	cl.track(held[2], http.StateIdle)
	admin.dial(t, "")
	admin.admitted(t)
	if n := shed(cl, "api", shedEvictedIdle); n != 1 {
		t.Errorf("api connections evicted %v, want 1", n)
	}
	if n := shed(cl, "admin", shedTotal); n != 1 {
		t.Errorf("admin refused %v, want 1", n)
	}
}

// An accept that fails for want of descriptors is retried, not returned
// (which would end the server's Serve), and logged once per
// acceptLogEvery.
func TestAcceptShortageRetried(t *testing.T) {
	cl := newLimits(t, connCaps{budget: 100, perListener: 10, perPeer: 10})
	var logged bytes.Buffer
	server, client := net.Pipe()
	defer client.Close()
	fl := &failingListener{errs: []error{
		&net.OpError{Op: "accept", Err: syscall.EMFILE}, &net.OpError{Op: "accept", Err: syscall.ENFILE}, syscall.EMFILE,
	}, conn: server}
	l := cl.listen(fl, "api", false)
	now := time.Unix(1000, 0)
	l.errs.log = slog.New(slog.NewTextHandler(&logged, nil))
	l.errs.rate.now = func() time.Time { return now }
	c, err := l.Accept()
	if err != nil {
		t.Fatalf("Accept: %v; want the failures retried", err)
	}
	c.Close()
	if n := strings.Count(logged.String(), "cannot accept connections"); n != 1 {
		t.Errorf("%d lines logged for 3 failures within %s, want 1:\n%s", n, acceptLogEvery, logged.String())
	}
	if n := testutil.ToFloat64(cl.metrics.acceptErrors.WithLabelValues("api")); n != 3 {
		t.Errorf("accept errors %v, want 3", n)
	}
	now = now.Add(acceptLogEvery)
	l.errs.note(syscall.EMFILE)
	if !strings.Contains(logged.String(), "failures_not_logged=2") {
		t.Errorf("the next line does not count the 2 failures not logged:\n%s", logged.String())
	}
	// Another error ends Accept, as it ends Serve.
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after the listener's end: %v, want net.ErrClosed", err)
	}
}

// failingListener fails errs in turn, then returns conn once, then
// net.ErrClosed.
type failingListener struct {
	mu   sync.Mutex
	errs []error
	conn net.Conn
}

func (f *failingListener) Accept() (net.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	if c := f.conn; c != nil {
		f.conn = nil
		return c, nil
	}
	return nil, net.ErrClosed
}
func (f *failingListener) Close() error   { return nil }
func (f *failingListener) Addr() net.Addr { return &net.TCPAddr{} }

// The budget is the fd limit less the reserve; caps that cannot work are
// refused with a ConnLimitsError wrapping snowfence.ErrInvalidConfig.
func TestConnCapsFromTheFDLimit(t *testing.T) {
	for _, tc := range []struct {
		limit           uint64
		budget, reserve int
	}{
		{1024, 768, 256},
		{20000, 18000, 2000},
		{256, 128, 128},
		{1 << 40, maxFDLimit - maxFDLimit/10, maxFDLimit / 10},
	} {
		if b, r := fdBudget(tc.limit); b != tc.budget || r != tc.reserve {
			t.Errorf("fdBudget(%d) = %d, %d; want %d, %d", tc.limit, b, r, tc.budget, tc.reserve)
		}
	}
	c, err := connCapsFor(Config{}, 1024)
	if err != nil || c.budget != 768 || c.perListener != 768 || c.perPeer != 768 || c.floor != 32 || c.shared() != 704 {
		t.Errorf("caps at 1024 with the defaults: %+v, %v", c, err)
	}
	c, err = connCapsFor(Config{MaxConns: 500, MaxConnsPerPeer: 100}, 20000)
	if err != nil || c.budget != 18000 || c.perListener != 500 || c.perPeer != 100 {
		t.Errorf("caps at 20000 with MaxConns 500, MaxConnsPerPeer 100: %+v, %v", c, err)
	}
	if c, _ = connCapsFor(Config{}, 20000); c.perPeer != DefaultMaxConnsPerPeer {
		t.Errorf("per-peer cap at 20000 by default: %d, want %d", c.perPeer, DefaultMaxConnsPerPeer)
	}
	for _, tc := range []struct {
		cfg   Config
		limit uint64
		field string
	}{
		{Config{MaxConns: -1}, 1024, "MaxConns"},
		{Config{MaxConns: 769}, 1024, "MaxConns"},
		{Config{MaxConnsPerPeer: -5}, 1024, "MaxConnsPerPeer"},
		{Config{MaxConnsPerPeer: 769}, 1024, "MaxConnsPerPeer"},
		{Config{}, 100, ""},
	} {
		_, err := connCapsFor(tc.cfg, tc.limit)
		var ce *ConnLimitsError
		if !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, snowfence.ErrInvalidConfig) {
			t.Errorf("MaxConns %d, MaxConnsPerPeer %d at limit %d: %v; want a ConnLimitsError for %q", tc.cfg.MaxConns, tc.cfg.MaxConnsPerPeer, tc.limit, err, tc.field)
		}
	}
}

// New refuses caps that cannot work before it opens the store.
func TestNewRefusesBadConnCaps(t *testing.T) {
	opened := errors.New("the store was opened")
	for _, cfg := range []Config{{MaxConns: -1}, {MaxConnsPerPeer: 1 << 40}} {
		cfg.Node = node.Config{Open: func(context.Context, int, *slog.Logger) (*node.Opened, error) { return nil, opened }}
		_, err := New(t.Context(), cfg)
		var ce *ConnLimitsError
		if !errors.As(err, &ce) || !errors.Is(err, snowfence.ErrInvalidConfig) {
			t.Errorf("New with MaxConns %d, MaxConnsPerPeer %d: %v; want a ConnLimitsError", cfg.MaxConns, cfg.MaxConnsPerPeer, err)
		}
	}
}

// An admitted connection keeps the TCP connection's CloseWrite, which
// net/http uses to close after an error response without a reset.
func TestAdmittedConnHalfCloses(t *testing.T) {
	cl := newLimits(t, connCaps{budget: 100, perListener: 10, perPeer: 10})
	ll := listenLimited(t, cl, "api", false)
	c := ll.dial(t, "")
	var sc net.Conn = ll.admitted(t)
	cw, ok := sc.(interface{ CloseWrite() error })
	if !ok {
		t.Fatalf("%T has no CloseWrite", sc)
	}
	io.WriteString(sc, "answer")
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if b, err := readAll(t, c); string(b) != "answer" || err != nil {
		t.Fatalf("the caller read %q, %v; want the answer, then EOF", b, err)
	}
	io.WriteString(c, "still open") // the server's read side is
	buf := make([]byte, 10)
	sc.SetReadDeadline(time.Now().Add(failWithin))
	if _, err := io.ReadFull(sc, buf); err != nil || string(buf) != "still open" {
		t.Fatalf("the server read %q, %v after its half-close", buf, err)
	}
}

// A refusal answers a request, never the void: a refused connection that
// sends nothing (a client's spare, dialled into its idle pool) is closed
// without a word, and one that sends a request gets the 503. Written at
// once, the 503 on a connection sitting in a client's idle pool was
// "unsolicited" to Go's Transport, which failed the next request that
// picked the connection (a flood test's probe saw "readLoopPeekFailLocked")
// instead of retrying it on another.
func TestRefusalAnswersTheRequest(t *testing.T) {
	cl := newLimits(t, connCaps{budget: 100, perListener: 1, perPeer: 100})
	ll := listenLimited(t, cl, "api", false)
	ll.dial(t, "")
	ll.admitted(t)
	closedSilently(t, ll.dial(t, ""))
	refused(t, ll.dial(t, ""), shedTotal)
}
