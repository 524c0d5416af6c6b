package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestStarting checks what a Starting answers: 503 starting with the reason
// and its detail on health and readiness, 503 with Retry-After on every
// route that needs the generator, the metrics and the API description as a
// Server serves them.
func TestStarting(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_gauge", Help: "a gauge"})
	reg.MustRegister(g)
	st := NewStarting(StartingConfig{Gatherer: reg, Region: 3})
	h := st.Handler()

	check := func(wantReason, wantDetail string) {
		t.Helper()
		for _, target := range []string{"/healthz", "/readyz"} {
			r := doOn(t, h, req{target: target})
			if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
				t.Fatalf("%s: status %d, Retry-After %q; want 503 with Retry-After", target, r.status, r.header.Get("Retry-After"))
			}
			var b errorBody
			if err := json.Unmarshal([]byte(r.body), &b); err != nil || b.Health == nil {
				t.Fatalf("%s: body %s (%v); want an error with health", target, r.body, err)
			}
			if b.Error.Code != CodeStarting || b.Error.Reason != wantReason || !strings.Contains(b.Error.Message, wantDetail) {
				t.Errorf("%s: error %+v; want code starting, reason %s, message with %q", target, b.Error, wantReason, wantDetail)
			}
			if hh := b.Health; hh.Status != "starting" || hh.Issuing || hh.Reason != wantReason || hh.Detail != wantDetail || hh.Machine != -1 || hh.Region != 3 {
				t.Errorf("%s: health %+v; want starting, not issuing, reason %s, detail %q, machine -1, region 3", target, *hh, wantReason, wantDetail)
			}
		}
	}
	check(ReasonStarting, "claiming a machine number")
	detail := "lease: no free machine number in range: 5-5 held"
	st.SetReason(ReasonNoFreeNumber, detail)
	check(ReasonNoFreeNumber, detail)

	for _, r := range []req{
		{method: "POST", target: "/v1/ids"},
		{method: "POST", target: "/v1/ids", body: `{}`},
		{method: "POST", target: "/v1/ids:batch", body: `{"count":3}`, contentType: "application/json"},
		{target: "/v1/ids/" + example + "/decode"},
	} {
		got := doOn(t, h, r)
		if got.status != http.StatusServiceUnavailable || got.header.Get("Retry-After") == "" {
			t.Errorf("%s %s: status %d, Retry-After %q; want 503 with Retry-After", r.method, r.target, got.status, got.header.Get("Retry-After"))
			continue
		}
		if e := errorOf(t, got); e.Code != CodeStarting || e.Reason != ReasonNoFreeNumber {
			t.Errorf("%s %s: %+v; want starting, %s", r.method, r.target, e, ReasonNoFreeNumber)
		}
	}
	if r := doOn(t, h, req{target: "/metrics"}); r.status != http.StatusOK || !strings.Contains(r.body, "test_gauge") {
		t.Errorf("/metrics: %d %.300s; want the gatherer's metrics", r.status, r.body)
	}
	if r := doOn(t, h, req{target: "/openapi.json"}); r.status != http.StatusOK || !strings.Contains(r.body, `"openapi"`) {
		t.Errorf("/openapi.json: %d", r.status)
	}
	if r := doOn(t, h, req{method: "GET", target: "/v1/ids"}); r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/ids: status %d, want 405", r.status)
	}
	if r := doOn(t, h, req{target: "/nope"}); r.status != http.StatusNotFound {
		t.Errorf("/nope: status %d, want 404", r.status)
	}

	// The split, as a Server's.
	if r := doOn(t, st.APIHandler(), req{target: "/readyz"}); r.status != http.StatusNotFound {
		t.Errorf("/readyz on the API handler: status %d, want 404", r.status)
	}
	if r := doOn(t, st.AdminHandler(), req{target: "/readyz"}); r.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz on the admin handler: status %d, want 503", r.status)
	}
	if r := doOn(t, st.AdminHandler(), req{method: "POST", target: "/v1/ids"}); r.status != http.StatusNotFound {
		t.Errorf("POST /v1/ids on the admin handler: status %d, want 404", r.status)
	}

	st.SetDraining()
	for _, target := range []string{"/healthz", "/readyz"} {
		if e := errorOf(t, doOn(t, h, req{target: target})); e.Code != CodeShuttingDown {
			t.Errorf("%s while draining: code %q, want shutting_down", target, e.Code)
		}
	}
}

// TestStartingWithoutGatherer checks that without a gatherer /metrics
// serves the Go and process collectors.
func TestStartingWithoutGatherer(t *testing.T) {
	r := doOn(t, NewStarting(StartingConfig{}).Handler(), req{target: "/metrics"})
	if r.status != http.StatusOK || !strings.Contains(r.body, "go_goroutines") {
		t.Fatalf("/metrics: status %d, body %.300s; want 200 with the Go collector", r.status, r.body)
	}
}
