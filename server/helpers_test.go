package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/publicid"
)

// example is the DESIGN worked example: v1, 2026-09-26T12:00:00.000Z,
// machine 37, sequence 5.
const example = "97301141913751557"

// exampleTime is the instant of the worked example.
var exampleTime = time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC)

// testPublicIDKeyset is the fixtures' keyset: version 2 primary, 1
// decrypt-only, 0 retired. Test keys only.
const testPublicIDKeyset = `{"keys": {
	"2": {"status": "primary", "key": "8d2b4f6a1c0e3957b8a6d4c2e0f19b7a"},
	"1": {"status": "decrypt-only", "key": "000102030405060708090a0b0c0d0e0f"},
	"0": {"status": "retired", "key": "3f1c9a0e6b2d48e7a5c4f0b19d8e7a62"}}}`

// examplePID is example sealed as an order under testPublicIDKeyset.
const examplePID = "order_25peqp0shbffmh4asf3fn5nb6zt"

func testPublicIDKeys(t testing.TB) *publicid.Keyset {
	t.Helper()
	ks, err := publicid.ParseKeyset([]byte(testPublicIDKeyset))
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// fixture is a server on a generator for machine 37 on a fake clock.
type fixture struct {
	t     testing.TB
	srv   *Server
	h     http.Handler
	clock *fakeclock.Clock
	gen   *snowfence.Generator
	reg   *prometheus.Registry
}

// newFixture builds a server whose generator uses Static(37, 0), a fake
// clock at exampleTime that advances itself when waited on, and clock policy
// off; gcfg and scfg may change the configs before use.
func newFixture(t testing.TB, gcfg func(*snowfence.Config), scfg func(*Config)) *fixture {
	t.Helper()
	clk := fakeclock.New(exampleTime)
	clk.AutoAdvance(true)
	gc := snowfence.Config{Lease: snowfence.Static(37, 0), Clock: clk, ClockPolicy: snowfence.ClockOff}
	if gcfg != nil {
		gcfg(&gc)
	}
	gen, err := snowfence.New(gc)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	sc := Config{Generator: gen, Registerer: reg, Clock: clk, PublicIDKeys: testPublicIDKeys(t),
		PublicIDOpeners: AnyCallerOpens{}, PublicIDSealers: AnyCallerOpens{}}
	if scfg != nil {
		scfg(&sc)
	}
	srv, err := New(sc)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, srv: srv, h: srv.Handler(), clock: clk, gen: gen, reg: reg}
}

// req describes a request for do.
type req struct {
	method, target, body string
	contentType          string
	header               map[string]string
}

// response is a recorded response.
type response struct {
	status int
	header http.Header
	body   string
}

func (f *fixture) do(r req) response {
	f.t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	method := r.method
	if method == "" {
		method = http.MethodGet
	}
	hr := httptest.NewRequest(method, r.target, body)
	if r.contentType != "" {
		hr.Header.Set("Content-Type", r.contentType)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, hr)
	return response{status: w.Code, header: w.Header(), body: w.Body.String()}
}

func (f *fixture) post(target, body string) response {
	f.t.Helper()
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	return f.do(req{method: http.MethodPost, target: target, body: body, contentType: ct})
}

// errorOf decodes an error body, failing the test if it is not one.
func errorOf(t *testing.T, r response) errorJSON {
	t.Helper()
	var b errorBody
	dec := json.NewDecoder(strings.NewReader(r.body))
	if err := dec.Decode(&b); err != nil || b.Error.Code == "" || b.Error.Message == "" {
		t.Fatalf("body %q is not an error body {\"error\":{\"code\",\"message\"}} (%v)", r.body, err)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	return b.Error
}

// batchIDs decodes {"ids":[…]} into IDs, checking each is canonical.
func batchIDs(t *testing.T, r response) []snowfence.ID {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, body %s; want 200", r.status, r.body)
	}
	var b struct {
		IDs []snowfence.ID `json:"ids"`
	}
	dec := json.NewDecoder(strings.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		t.Fatalf("batch body %.200q: %v", r.body, err)
	}
	return b.IDs
}

// nilLease is a LeaseView with no grant: the generator is fenced. It has
// nothing else of its own either.
type nilLease struct{}

func (nilLease) GrantAt(int64) (*snowfence.Grant, error) { return nil, nil }
func (nilLease) Schedule() snowfence.Schedule            { return snowfence.Schedule{} }
func (nilLease) Clock() snowfence.Clock                  { return nil }
func (nilLease) Placements() []snowfence.Placement       { return nil }
func (nilLease) Bind() error                             { return nil }
func (nilLease) MarkReached(*snowfence.Grant)            {}

// grantLease is a LeaseView with a fixed grant that, unlike Static, does not
// tell New its placement: the generator checks the grant when it uses it.
type grantLease struct{ g *snowfence.Grant }

func (l grantLease) GrantAt(int64) (*snowfence.Grant, error) { return l.g, nil }
func (grantLease) Schedule() snowfence.Schedule              { return snowfence.Schedule{} }
func (grantLease) Clock() snowfence.Clock                    { return nil }
func (grantLease) Placements() []snowfence.Placement         { return nil }
func (grantLease) Bind() error                               { return nil }
func (grantLease) MarkReached(*snowfence.Grant)              {}

// fixedStatus is a lease StatusReporter returning a set status.
type fixedStatus struct {
	mu sync.Mutex
	s  lease.Status
}

func (f *fixedStatus) Status() lease.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s
}

// startingReason is a Config.Starting whose answer the test sets.
type startingReason struct {
	mu             sync.Mutex
	reason, detail string
	started        bool
}

func (s *startingReason) set(reason, detail string, started bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reason, s.detail, s.started = reason, detail, started
}

func (s *startingReason) get() (string, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason, s.detail, !s.started
}

// newStarting builds a fixture whose server is starting (reason starting,
// detail "claiming a machine number") with a lease status of region, its
// generator holding no lease; scfg may change the config before use.
func newStarting(t testing.TB, region int, scfg func(*Config)) (*fixture, *startingReason) {
	st := &startingReason{reason: ReasonStarting, detail: "claiming a machine number"}
	f := newFixture(t, func(c *snowfence.Config) { c.Lease = nilLease{} }, func(c *Config) {
		c.Starting = st.get
		c.Lease = &fixedStatus{s: lease.Status{State: lease.StateClaiming, Machine: -1, Region: region}}
		if scfg != nil {
			scfg(c)
		}
	})
	return f, st
}
