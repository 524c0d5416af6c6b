package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// statusOf fetches and decodes GET /v1/status from h.
func statusOf(t *testing.T, h http.Handler) statusJSON {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/status", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /v1/status: %d %s", w.Code, w.Body)
	}
	var st statusJSON
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("GET /v1/status: %v in %s", err, w.Body)
	}
	return st
}

// countingFleet is a Config.Fleet that counts its reads.
type countingFleet struct {
	reads atomic.Int64
	recs  []lease.Record
	err   error
}

func (c *countingFleet) list(context.Context) ([]lease.Record, error) {
	c.reads.Add(1)
	return c.recs, c.err
}

func TestStatusHolder(t *testing.T) {
	ls := &fixedStatus{s: lease.Status{State: lease.StateHeld, Machine: 37, Holder: "host-a/pid 7/start 1", Token: 41, MarkMs: 1, Claims: 1}}
	f := newFixture(t, nil, func(c *Config) {
		c.Lease = ls
		c.RegionNames = func(n int) (string, bool) { return map[int]string{0: "eu-west"}[n], n == 0 }
	})
	for range 3 {
		if r := f.post("/v1/ids", ""); r.status != http.StatusOK {
			t.Fatalf("mint: %d %s", r.status, r.body)
		}
	}
	st := statusOf(t, f.h)
	h := st.Holder
	if h.Status != "ok" || !h.Issuing || h.Machine != 37 || h.Region != 0 || h.RegionName != "eu-west" || h.Layout != "v1" {
		t.Errorf("holder %+v: want ok, issuing, machine 37, region 0 eu-west, layout v1", h)
	}
	if h.Holder != ls.s.Holder || h.Token != 41 || h.LeaseState != "held" || h.Issued != 3 {
		t.Errorf("holder %+v: want the lease's holder, token 41, held, 3 issued", h)
	}
	if got, want := st.NowMs, exampleTime.UnixMilli(); got < want {
		t.Errorf("now_ms %d, want at or after %d (the fixture's clock)", got, want)
	}
	if len(st.Layouts) != 1 {
		t.Fatalf("layouts %+v, want the default schedule's one step", st.Layouts)
	}
	if l := st.Layouts[0]; l.Name != "v1" || l.TimeBits != 41 || l.RegionBits != 0 || l.MachineBits != 10 || l.SequenceBits != 12 || l.UnitMs != 1 || l.FromMs != 0 {
		t.Errorf("layout %+v, want v1: 41/0/10/12 bits, 1 ms, from 0", l)
	}
	if st.Fleet == nil || st.Fleet.Available || len(st.Fleet.Records) != 0 {
		t.Errorf("fleet %+v without Config.Fleet: want not available, no records", st.Fleet)
	}
}

func TestStatusRefusing(t *testing.T) {
	f := newFixture(t, func(c *snowfence.Config) { c.Lease = nilLease{} }, nil)
	h := statusOf(t, f.h).Holder
	if h.Status != "refusing" || h.Issuing || h.Reason == "" || h.Machine != -1 {
		t.Errorf("fenced holder %+v: want refusing, not issuing, a reason, machine -1", h)
	}
}

// The fleet is read at most once a second however often pages poll, and
// its regions are named.
func TestStatusFleet(t *testing.T) {
	cf := &countingFleet{recs: []lease.Record{
		{Machine: 3, Region: 1, Holder: "b", Token: 9, MarkMs: 100, ExpiresMs: 200, Claim: "secret-nonce"},
		{Machine: 4, Region: 2, MarkMs: 50, Quarantined: true},
	}}
	f := newFixture(t, nil, func(c *Config) {
		c.Fleet = cf.list
		c.RegionNames = func(n int) (string, bool) { return "us-east", n == 1 }
	})
	st := statusOf(t, f.h)
	want := []recordStatus{
		{Machine: 3, Region: 1, RegionName: "us-east", Holder: "b", Token: 9, MarkMs: 100, ExpiresMs: 200},
		{Machine: 4, Region: 2, MarkMs: 50, Quarantined: true},
	}
	if !st.Fleet.Available || st.Fleet.Error != "" || len(st.Fleet.Records) != 2 || st.Fleet.Records[0] != want[0] || st.Fleet.Records[1] != want[1] {
		t.Fatalf("fleet %+v, want available with %+v", st.Fleet, want)
	}
	statusOf(t, f.h)
	if n := cf.reads.Load(); n != 1 {
		t.Errorf("two polls within a second read the store %d times, want 1", n)
	}
	f.clock.Advance(fleetEvery)
	statusOf(t, f.h)
	if n := cf.reads.Load(); n != 2 {
		t.Errorf("a poll a second later: %d reads, want 2", n)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/status", nil))
	if strings.Contains(w.Body.String(), "secret-nonce") {
		t.Errorf("the status carries a claim's identity: %s", w.Body)
	}

	cf.err = errors.New("store down")
	f.clock.Advance(fleetEvery)
	if fl := statusOf(t, f.h).Fleet; !fl.Available || !strings.Contains(fl.Error, "store down") {
		t.Errorf("fleet after a failed read %+v: want available with the error", fl)
	}
}

// The page's routes are served with the admin routes: on the admin
// listener, not on the main one.
func TestStatusListeners(t *testing.T) {
	f := newFixture(t, nil, nil)
	st, _ := newStarting(t, 0, nil)
	for _, path := range []string{"/", "/status/status.js", "/v1/status", "/v1/status/decode/" + example} {
		for _, tc := range []struct {
			name     string
			h        http.Handler
			want     int
			starting bool
		}{
			{"Handler", f.srv.Handler(), 200, false},
			{"AdminHandler", f.srv.AdminHandler(), 200, false},
			{"APIHandler", f.srv.APIHandler(), 404, false},
			{"starting AdminHandler", st.srv.AdminHandler(), 200, true},
			{"starting APIHandler", st.srv.APIHandler(), 404, true},
		} {
			want := tc.want
			if strings.HasPrefix(path, "/v1/status/decode/") && tc.starting && want == 200 {
				want = http.StatusServiceUnavailable // nothing is decoded while starting
			}
			w := httptest.NewRecorder()
			tc.h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
			if w.Code != want {
				t.Errorf("%s GET %s: %d, want %d (%.200s)", tc.name, path, w.Code, want, w.Body)
			}
		}
	}
}

func TestStatusStarting(t *testing.T) {
	cf := &countingFleet{recs: []lease.Record{{Machine: 5, Holder: "a", Token: 2, MarkMs: 10}}}
	f, st := newStarting(t, 2, func(c *Config) { c.Fleet = cf.list })
	st.set(ReasonNoFreeNumber, "every number held", false)
	s := statusOf(t, f.srv.AdminHandler())
	if h := s.Holder; h.Status != "starting" || h.Issuing || h.Reason != ReasonNoFreeNumber || h.Detail != "every number held" || h.Machine != -1 || h.Region != 2 {
		t.Errorf("starting holder %+v", h)
	}
	if !s.Fleet.Available || len(s.Fleet.Records) != 1 || s.Fleet.Records[0].Holder != "a" {
		t.Errorf("starting fleet %+v: want the store's one record", s.Fleet)
	}
	if len(s.Layouts) != 1 || s.Layouts[0].Name != "v1" {
		t.Errorf("starting layouts %+v: want the default schedule", s.Layouts)
	}
}

// The page asks for nothing but its own server's paths, and its
// Content-Security-Policy holds every request to the server's origin.
func TestStatusPageSelfContained(t *testing.T) {
	f := newFixture(t, nil, nil)
	r := f.do(req{target: "/"})
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", r.status, r.header.Get("Content-Type"))
	}
	csp := r.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "style-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(r.body, -1)
	if len(refs) < 3 {
		t.Fatalf("the page references %d files, want its stylesheet, script and icon", len(refs))
	}
	for _, m := range refs {
		ref := m[1]
		if !strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "//") {
			t.Errorf("the page references %q: want a path on its own server", ref)
			continue
		}
		if got := f.do(req{target: ref}); got.status != http.StatusOK {
			t.Errorf("the page's %s: %d", ref, got.status)
		}
	}
	js := f.do(req{target: "/status/status.js"}).body
	for _, m := range regexp.MustCompile(`fetch\("([^"]*)"`).FindAllStringSubmatch(js, -1) {
		if !strings.HasPrefix(m[1], "/v1/status") {
			t.Errorf("the script fetches %q: want only /v1/status and its decoder", m[1])
		}
	}
	if strings.Contains(js, "http://") || strings.Contains(js, "https://") {
		t.Error("the script names an absolute URL")
	}
}

// TestStatusPageDecoderShowsWarnings checks that the status page's decoder
// shows every warning the decode endpoint gives (an ID in the future, a
// region the registry does not know) from its warnings list, and marks the
// caption as a warning: the endpoint answers 200 for such IDs, so the page
// has nothing else to tell them by.
func TestStatusPageDecoderShowsWarnings(t *testing.T) {
	f := newFixture(t, nil, nil)
	js := f.do(req{target: "/status/status.js"}).body
	for _, want := range []string{"d.warnings", ".message", `"warn"`} {
		draw := js[strings.Index(js, "function drawBits"):strings.Index(js, "function decode(")]
		if !strings.Contains(draw, want) {
			t.Errorf("the decoder's drawBits does not use %s: it must show each of the decode answer's warnings and mark the caption", want)
		}
	}
}

// After raise-marks the fleet is its holders and one summary, not a row
// for every number raised: the free numbers that only carry the raised
// mark are counted in quiet (lease.Notable).
func TestStatusFleetQuiet(t *testing.T) {
	raised := exampleTime.UnixMilli() + 60_000
	recs := []lease.Record{{Machine: 3, Holder: "b", Token: 9, MarkMs: raised + 5000}}
	for n := 4; n < 1024; n++ {
		recs = append(recs, lease.Record{Machine: n, MarkMs: raised})
	}
	cf := &countingFleet{recs: recs}
	f := newFixture(t, nil, func(c *Config) { c.Fleet = cf.list })
	st := statusOf(t, f.h)
	if len(st.Fleet.Records) != 1 || st.Fleet.Records[0].Machine != 3 || st.Fleet.Quiet != (lease.Quiet{N: 1020, MaxMarkMs: raised}) {
		t.Fatalf("fleet after raise-marks: %d records, quiet %+v; want machine 3 alone and 1020 free numbers with marks up to %d",
			len(st.Fleet.Records), st.Fleet.Quiet, raised)
	}
}
