package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

// region is a fake server that can be taken down (mint 503, healthz 503)
// and brought back, and logs what it answered, in order.
type region struct {
	ts   *httptest.Server
	next *atomic.Int64
	mu   sync.Mutex
	up   bool
	log  []event
}

type event struct {
	health bool // a probe, else a mint
	ok     bool
}

func newRegion(t *testing.T, next *atomic.Int64) *region {
	g := &region{next: next, up: true}
	g.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		up := g.up
		g.log = append(g.log, event{health: r.URL.Path == "/healthz", ok: up})
		g.mu.Unlock()
		switch {
		case !up:
			writeError(w, http.StatusServiceUnavailable, "1", "fenced")
		case r.URL.Path == "/healthz":
			w.WriteHeader(http.StatusOK)
		default:
			writeBatch(w, g.next, countOf(r))
		}
	}))
	t.Cleanup(g.ts.Close)
	return g
}

func (g *region) set(up bool) {
	g.mu.Lock()
	g.up = up
	g.mu.Unlock()
}

func (g *region) events() []event {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]event(nil), g.log...)
}

// TestFailover: the primary fails, the client moves to the backup after
// FailureThreshold failures, and returns to the primary only after
// RecoveryProbes consecutive healthy probes.
func TestFailover(t *testing.T) {
	var next atomic.Int64
	primary, backup := newRegion(t, &next), newRegion(t, &next)
	c := newClient(t, Config{
		Endpoints:     []string{primary.ts.URL, backup.ts.URL},
		MinRefill:     4,
		MaxBuffer:     8,
		BaseBackoff:   time.Microsecond,
		MaxBackoff:    time.Microsecond,
		MaxRetryAfter: time.Microsecond,
		ProbeInterval: time.Millisecond,
	})
	ctx := ctxT(t)
	seen := map[snowfence.ID]bool{}
	take := func() {
		t.Helper()
		ids, err := c.NextN(ctx, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("ID %d handed out twice", id)
			}
			seen[id] = true
		}
	}
	take()
	primary.set(false)
	for c.Stats().Endpoint != 1 {
		take()
	}
	failedMints := 0
	for _, e := range primary.events() {
		if !e.health && !e.ok {
			failedMints++
		}
	}
	if failedMints != 3 {
		t.Errorf("the primary was taken out after %d failed requests, want 3", failedMints)
	}
	if len(backup.events()) == 0 {
		t.Errorf("no request went to the backup while the primary was out")
	}
	primary.set(true)
	// Take IDs until the primary answers a mint again.
	for mintedAgain := false; !mintedAgain; {
		take()
		for _, e := range primary.events()[1:] {
			mintedAgain = mintedAgain || !e.health && e.ok
		}
	}
	// The primary's log: after its failures, probes, and at least three
	// healthy probes in a row before the first mint it answers again.
	ev := primary.events()
	first := -1
	for i, e := range ev {
		if i > 0 && !e.health && e.ok && !ev[i-1].ok {
			t.Fatalf("a mint went to the primary right after a failure: %v", ev)
		}
		if !e.health && e.ok && i > 3 {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatalf("no mint went back to the primary: %v", ev)
	}
	for _, e := range ev[first-3 : first] {
		if !e.health || !e.ok {
			t.Fatalf("the client returned to the primary without 3 healthy probes first: %v", ev[:first+1])
		}
	}
}

// sleepLog is a clock whose Sleep records its duration and moves the clock
// on at once, except the prober's ProbeInterval (an hour here), which
// blocks: the test reads the refill's waits, not the prober's.
type sleepLog struct {
	*fakeclock.Clock
	mu    sync.Mutex
	waits []time.Duration
	// during, if set, runs inside each recorded wait (as the prober would).
	during func()
}

func (s *sleepLog) Sleep(ctx context.Context, d time.Duration) error {
	if d >= time.Hour {
		return s.Clock.Sleep(ctx, d)
	}
	s.mu.Lock()
	s.waits = append(s.waits, d)
	during := s.during
	s.mu.Unlock()
	if during != nil {
		during()
	}
	s.Clock.Advance(d)
	return ctx.Err()
}

func (s *sleepLog) taken() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// TestFailoverBackoffRestarts: with a region's three endpoints dead, the
// client's waits start small again on each endpoint it fails over to, so
// the healthy endpoint behind them is reached after 3 × (100 + 200) ms, not
// after waits grown to MaxBackoff (with the exponent counting every attempt
// of the refill, the waits were 100, 200, 800, 1600, 2000, 2000 ms: 6.7 s).
// Once every endpoint is out of service the waits grow again, so a fleet
// that is down entirely is still backed off from.
func TestFailoverBackoffRestarts(t *testing.T) {
	ms := time.Millisecond
	cfg := Config{BaseBackoff: 100 * ms, MaxBackoff: 2 * time.Second, ProbeInterval: time.Hour, MaxAttempts: 16}
	t.Run("to a live endpoint", func(t *testing.T) {
		var next atomic.Int64
		live := newRegion(t, &next)
		clk := &sleepLog{Clock: fakeclock.New(exampleTime)}
		cfg := cfg
		cfg.Endpoints, cfg.Clock = []string{deadURL(t), deadURL(t), deadURL(t), live.ts.URL}, clk
		c := newClient(t, cfg)
		c.jitter = func(d time.Duration) time.Duration { return d }
		if _, err := c.Next(ctxT(t)); err != nil {
			t.Fatalf("Next with a live fourth endpoint: %v", err)
		}
		want := []time.Duration{100 * ms, 200 * ms, 100 * ms, 200 * ms, 100 * ms, 200 * ms}
		if got := clk.taken(); !slices.Equal(got, want) {
			t.Errorf("waits before the live endpoint answered: %v, want %v", got, want)
		}
		if st := c.Stats(); st.Endpoint != 3 {
			t.Errorf("stats %+v: want endpoint 3 in use", st)
		}
	})
	t.Run("all down", func(t *testing.T) {
		clk := &sleepLog{Clock: fakeclock.New(exampleTime)}
		cfg := cfg
		cfg.Endpoints, cfg.Clock = []string{deadURL(t), deadURL(t), deadURL(t)}, clk
		c := newClient(t, cfg)
		c.jitter = func(d time.Duration) time.Duration { return d }
		if _, err := c.Next(ctxT(t)); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Next with every endpoint dead: %v, want ErrUnavailable", err)
		}
		// Two waits on each endpoint before it is taken out; the last
		// one's third failure finds none in service, and from there the
		// waits double up to MaxBackoff. No wait follows the last attempt.
		want := []time.Duration{100 * ms, 200 * ms, 100 * ms, 200 * ms, 100 * ms, 200 * ms,
			400 * ms, 800 * ms, 1600 * ms, 2000 * ms, 2000 * ms, 2000 * ms, 2000 * ms}
		if got := clk.taken(); !slices.Equal(got, want) {
			t.Errorf("waits with every endpoint dead: %v, want %v", got, want)
		}
	})
}

// TestFlappingFleetBackoff: endpoints that pass their health probes but
// fail every request are put back in service during each wait (here by
// hand, as the prober would with RecoveryProbes 1) and taken out again by
// the next failure. Each of those failures is a failover, but only the
// first from each endpoint restarts the exponent: the waits still double
// to MaxBackoff. (Restarting it on every failover kept them all at
// 100 ms: a fleet issuing nothing retried at BaseBackoff.)
func TestFlappingFleetBackoff(t *testing.T) {
	ms := time.Millisecond
	clk := &sleepLog{Clock: fakeclock.New(exampleTime)}
	c := newClient(t, Config{Endpoints: []string{deadURL(t), deadURL(t)}, Clock: clk,
		FailureThreshold: 1, RecoveryProbes: 1, ProbeInterval: time.Hour,
		BaseBackoff: 100 * ms, MaxBackoff: 2 * time.Second, MaxAttempts: 12})
	c.jitter = func(d time.Duration) time.Duration { return d }
	clk.during = func() {
		for i := range c.s.Endpoints {
			c.eps.probed(i, true)
		}
	}
	if _, err := c.Next(ctxT(t)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Next with every endpoint failing: %v, want ErrUnavailable", err)
	}
	// Attempt 0 fails over from endpoint 0 (no wait); attempt 1 takes
	// endpoint 1 out with none left in service and waits; both are back
	// after the wait, and so on: a wait after every second attempt.
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms}
	if got := clk.taken(); !slices.Equal(got, want) {
		t.Errorf("waits with the endpoints flapping: %v, want %v", got, want)
	}
}
