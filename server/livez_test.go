package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// stallingStatus is a lease StatusReporter and StallReporter whose answers
// the test sets.
type stallingStatus struct {
	fixedStatus
	stalled bool
	since   time.Duration
}

func (s *stallingStatus) Stalled() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.since, s.stalled
}

func (s *stallingStatus) set(since time.Duration, stalled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since, s.stalled = since, stalled
}

// GET /livez answers 200 through every refusal that clears on its own —
// the generator holding no lease (fenced, no-lease), the service starting,
// the drain — and 503 unavailable, reason stalled, only while the lease
// reports its keeper's loop wedged (and not draining); a lease that does
// not report on its loop, or none, is alive. It is an admin route: 404 on
// the main listener's handler with an admin listener apart.
func TestLivez(t *testing.T) {
	alive := func(t *testing.T, f *fixture, what string) {
		t.Helper()
		if r := f.do(req{target: "/livez"}); r.status != http.StatusOK || r.body != `{"alive":true}` {
			t.Errorf("/livez %s: %d %s; want 200 {\"alive\":true}", what, r.status, r.body)
		}
	}
	wedged := func(t *testing.T, f *fixture, what string) {
		t.Helper()
		r := f.do(req{target: "/livez"})
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("/livez %s: %d %s; want 503", what, r.status, r.body)
		}
		if e := errorOf(t, r); e.Code != CodeUnavailable || e.Reason != ReasonStalled || !strings.Contains(e.Message, "17s") || !strings.Contains(e.Message, "restart") {
			t.Errorf("/livez %s: %+v; want unavailable, reason stalled, naming 17s and the restart", what, e)
		}
	}

	ls := &stallingStatus{fixedStatus: fixedStatus{s: lease.Status{State: lease.StateHeld, Machine: 37}}}
	f := newFixture(t, nil, func(c *Config) { c.Lease = ls })
	alive(t, f, "issuing")
	ls.set(17*time.Second, true)
	wedged(t, f, "with the keeper's loop wedged")
	if r := f.do(req{target: "/healthz"}); r.status != http.StatusOK {
		t.Errorf("/healthz with the loop wedged but the grant still good: %d; /livez alone reports the loop", r.status)
	}
	ls.set(0, false)
	alive(t, f, "once the loop came round again")
	ls.set(17*time.Second, true)
	f.srv.SetDraining()
	alive(t, f, "draining (the keeper stops on purpose)")

	fenced := newFixture(t, func(c *snowfence.Config) { c.Lease = nilLease{} },
		func(c *Config) { c.Lease = &fixedStatus{s: lease.Status{State: lease.StateFenced, Machine: 37}} })
	if r := fenced.do(req{target: "/healthz"}); r.status != http.StatusServiceUnavailable {
		t.Fatalf("/healthz fenced: %d; want 503 (the fixture does not refuse)", r.status)
	}
	alive(t, fenced, "while fenced (/healthz 503)")

	starting, st := newStarting(t, 0, nil)
	alive(t, starting, "while starting")
	st.set(ReasonNoFreeNumber, "every number held", false)
	alive(t, starting, "while a spare waits")
	startingWedged := must(newStarting(t, 0, func(c *Config) {
		c.Lease = &stallingStatus{fixedStatus: fixedStatus{s: lease.Status{State: lease.StateClaiming, Machine: -1}}, since: 17 * time.Second, stalled: true}
	}))
	wedged(t, startingWedged, "while starting, with the loop wedged in its first claim")

	alive(t, newFixture(t, nil, nil), "without a lease")

	split := newFixture(t, nil, func(c *Config) { c.Lease = ls })
	if r := doOn(t, split.srv.APIHandler(), req{target: "/livez"}); r.status != http.StatusNotFound {
		t.Errorf("/livez on the main listener's handler: %d; want 404 (an admin route)", r.status)
	}
	if r := doOn(t, split.srv.AdminHandler(), req{target: "/livez"}); r.status != http.StatusServiceUnavailable {
		t.Errorf("/livez on the admin handler, the loop wedged: %d; want 503", r.status)
	}
}
