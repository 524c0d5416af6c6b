package ops

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/perimeter"
	"github.com/snowfence/snowfence/server"
)

// exported is what one scrape of /metrics exposed: for each series name
// (histograms' _bucket, _sum and _count included), the label sets of its
// series.
type exported map[string][]map[string]string

// holding is a lease keeper's status with a number held, renewed now, and
// the next layout's number being claimed: every lease series is exported.
type holding struct{}

func (holding) Status() lease.Status {
	now := time.Now()
	return lease.Status{State: lease.StateHeld, Machine: 37, Holder: "host/1/2", Token: 7,
		MarkMs: now.Add(10 * time.Second).UnixMilli(), LastRenewal: now, Claims: 1,
		Next: &lease.Status{State: lease.StateClaiming, Layout: "v2", Machine: -1}}
}

// scrape starts a server whose every optional series is present (a lease,
// clock policy warn with a readable clock, region numbers, a perimeter
// with one listed caller, on one registry), mints an ID, and returns what
// its /metrics exposes.
func scrape(t *testing.T) exported {
	t.Helper()
	reg := prometheus.NewRegistry()
	callers := filepath.Join(t.TempDir(), "callers.json")
	if err := os.WriteFile(callers, []byte(`{"default": "deny", "callers": {"orders.corp": {"rate": 1000, "burst": 1000}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := perimeter.New(perimeter.Config{CallersFile: callers, PollInterval: -1, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	gen, err := snowfence.New(snowfence.Config{Lease: snowfence.Static(37, 0), ClockPolicy: snowfence.ClockWarn,
		ClockStatus: func() (snowfence.ClockStatus, error) {
			return snowfence.ClockStatus{Synchronized: true, EstimatedError: time.Millisecond, MaxError: 2 * time.Millisecond}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gen.Close() })
	srv, err := server.New(server.Config{Generator: gen, Lease: holding{}, Registerer: reg,
		RegionNumbers: func() (int, int) { return 5, 8 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: status %d: %s", rec.Code, rec.Body)
	}
	ex := exported{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sel, err := parseSelector(line[:strings.LastIndexByte(line, ' ')])
		if err != nil {
			t.Fatalf("exposition line %q: %v", line, err)
		}
		labels := map[string]string{}
		for _, m := range sel.matchers {
			labels[m.label] = m.value
		}
		ex[sel.name] = append(ex[sel.name], labels)
	}
	return ex
}

// targetLabels are added by Prometheus to every series it scrapes; a
// rule may select on them though no exposition has them.
var targetLabels = map[string]bool{"job": true, "instance": true}

// check reports what in sel the exposition does not have: its metric, a
// label it names, or a literal value (or alternative of a regular
// expression made of literals) it selects.
func (ex exported) check(sel selector) []string {
	series, ok := ex[sel.name]
	if !ok {
		return []string{"metric " + sel.name + " is not exported"}
	}
	var bad []string
	for _, m := range sel.matchers {
		if targetLabels[m.label] {
			continue
		}
		has := false
		for _, s := range series {
			if _, ok := s[m.label]; ok {
				has = true
			}
		}
		if !has {
			bad = append(bad, sel.name+" has no label "+m.label)
			continue
		}
		if m.op != "=" && m.op != "=~" || strings.Contains(m.value, "$") {
			continue
		}
		alts := []string{m.value}
		if m.op == "=~" {
			var literal bool
			if alts, literal = alternatives(m.value); !literal {
				continue
			}
		}
		for _, v := range alts {
			found := false
			for _, s := range series {
				if s[m.label] == v {
					found = true
				}
			}
			if !found {
				bad = append(bad, sel.name+" has no series with "+m.label+"="+quote(v))
			}
		}
	}
	return bad
}

func TestScrapeHasEverySeries(t *testing.T) {
	ex := scrape(t)
	for _, name := range []string{
		"snowfence_ids_issued_total", "snowfence_fence_remaining_seconds", "snowfence_clock_max_error_limit_seconds",
		"snowfence_lease_state", "snowfence_lease_next_state", "snowfence_region_numbers_left",
		"snowfence_caller_requests_throttled_total", "snowfence_http_request_duration_seconds_bucket",
	} {
		if _, ok := ex[name]; !ok {
			t.Errorf("the scrape lacks %s: the fixture no longer exports every series", name)
		}
	}
}
