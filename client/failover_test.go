package client

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
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
