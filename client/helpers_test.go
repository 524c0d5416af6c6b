package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/server"
)

// exampleTime is the instant the fake clocks start at.
var exampleTime = time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC)

// realServer serves the real server package over a generator for machine
// 37 on a fake clock that moves itself when waited on (so a batch never
// waits for the next millisecond), or on the system clock.
func realServer(t testing.TB, fake bool) *httptest.Server {
	t.Helper()
	return realServerWith(t, fake, nil)
}

// realServerWith is realServer with the server's config changed by scfg
// (nil: none).
func realServerWith(t testing.TB, fake bool, scfg func(*server.Config)) *httptest.Server {
	t.Helper()
	cfg := snowfence.Config{Lease: snowfence.Static(37, 0), ClockPolicy: snowfence.ClockOff}
	if fake {
		clk := fakeclock.New(exampleTime)
		clk.AutoAdvance(true)
		cfg.Clock = clk
	}
	gen, err := snowfence.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc := server.Config{Generator: gen, Registerer: prometheus.NewRegistry()}
	if scfg != nil {
		scfg(&sc)
	}
	srv, err := server.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		gen.Close()
	})
	return ts
}

// newClient returns a client on cfg, closed when the test ends.
func newClient(t testing.TB, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// appendBatchBody appends the batch body of ids, as the server writes it.
func appendBatchBody(b []byte, ids []int64) []byte {
	b = append(b, `{"ids":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '"')
	}
	return append(b, "]}"...)
}

// countOf reads ?count=N of a mint request.
func countOf(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("count"))
	if err != nil {
		return -1
	}
	return n
}

// writeBatch answers a mint request with n IDs from next.
func writeBatch(w http.ResponseWriter, next *atomic.Int64, n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = next.Add(1)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(appendBatchBody(nil, ids))
	return ids
}

// writeError answers with the server's error body.
func writeError(w http.ResponseWriter, status int, retryAfter, code string) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%q,"message":"test refusal","reason":"test"}}`, code)
}

// scripted is a fake server whose mint answers follow a script: each
// request takes the next function (the last repeats). It counts requests
// and notifies reqs (if set) of each.
type scripted struct {
	mu      sync.Mutex
	script  []func(w http.ResponseWriter, r *http.Request)
	served  int
	health  int // status of /healthz
	next    atomic.Int64
	reqs    chan string
	ts      *httptest.Server
	healthN int
}

func newScripted(t testing.TB, script ...func(w http.ResponseWriter, r *http.Request)) *scripted {
	s := &scripted{script: script, health: http.StatusOK}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.ts.Close)
	return s
}

func (s *scripted) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if r.URL.Path == "/healthz" {
		h := s.health
		s.healthN++
		s.mu.Unlock()
		w.WriteHeader(h)
		if s.reqs != nil {
			s.reqs <- "healthz"
		}
		return
	}
	f := s.script[min(s.served, len(s.script)-1)]
	s.served++
	s.mu.Unlock()
	if s.reqs != nil {
		s.reqs <- r.URL.RawQuery
	}
	f(w, r)
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// ok answers with a batch of the count asked for.
func (s *scripted) ok(w http.ResponseWriter, r *http.Request) { writeBatch(w, &s.next, countOf(r)) }

// memTransport is an in-memory http.RoundTripper that answers every mint
// request with a batch of increasing IDs, cheaply: each ID is the batch
// number followed by three digits of position, so a body is made by
// writing the batch number into a fixed template.
type memTransport struct {
	mu    sync.Mutex
	batch int64 // 16 digits
	tmpl  []byte
	pos   []int // where each ID's batch digits go in tmpl
	// body is the last answer's body, reused: the client reads one
	// answer at a time.
	body []byte
}

func newMemTransport() *memTransport {
	m := &memTransport{batch: 1_000_000_000_000_000}
	ids := make([]int64, snowfence.MaxBatch)
	for i := range ids {
		ids[i] = m.batch*1000 + int64(i)
	}
	m.tmpl = appendBatchBody(nil, ids)
	for i := range ids {
		m.pos = append(m.pos, len(`{"ids":[`)+i*(19+3)+1)
	}
	return m
}

func (m *memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	n := countOf(r)
	m.mu.Lock()
	m.batch++
	digits := strconv.AppendInt(make([]byte, 0, 16), m.batch, 10)
	body := append(m.body[:0], m.tmpl[:m.pos[n-1]+19+1]...)
	for _, p := range m.pos[:n] {
		copy(body[p:], digits)
	}
	body = append(body, "]}"...)
	m.body = body
	m.mu.Unlock()
	return &http.Response{
		StatusCode:    http.StatusOK,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}, nil
}

// ctxT returns a context ending with the test (or after a minute).
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// deadURL is the address of a server that is gone: connections are
// refused, as from a host that was killed.
func deadURL(t testing.TB) string {
	ts := httptest.NewServer(http.NotFoundHandler())
	ts.Close()
	return ts.URL
}
