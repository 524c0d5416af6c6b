package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestStarting checks what a server answers while Config.Starting says it
// is starting: 503 starting with the reason and its detail on health and
// readiness, 503 with Retry-After on every route that needs the
// generator, the metrics and the API description as ever; and, from the
// first moment Starting answers false, the generator's own answers, Starting
// no longer asked.
func TestStarting(t *testing.T) {
	f, st := newStarting(t, 3, nil)
	h := f.srv.Handler()

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
	st.set(ReasonNoFreeNumber, detail, false)
	check(ReasonNoFreeNumber, detail)

	for _, r := range []req{
		{method: "POST", target: "/v1/ids"},
		{method: "POST", target: "/v1/ids", body: `{}`},
		{method: "POST", target: "/v1/ids:batch", body: `{"count":3}`, contentType: "application/json"},
		{target: "/v1/ids/" + example + "/decode"},
		{method: "POST", target: "/v1/uuids"},
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
	if r := doOn(t, h, req{target: "/metrics"}); r.status != http.StatusOK || !strings.Contains(r.body, "snowfence_") {
		t.Errorf("/metrics: %d %.300s; want the server's metrics", r.status, r.body)
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

	// The split, as ever.
	if r := doOn(t, f.srv.APIHandler(), req{target: "/readyz"}); r.status != http.StatusNotFound {
		t.Errorf("/readyz on the API handler: status %d, want 404", r.status)
	}
	if r := doOn(t, f.srv.AdminHandler(), req{target: "/readyz"}); r.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz on the admin handler: status %d, want 503", r.status)
	}
	if r := doOn(t, f.srv.AdminHandler(), req{method: "POST", target: "/v1/ids"}); r.status != http.StatusNotFound {
		t.Errorf("POST /v1/ids on the admin handler: status %d, want 404", r.status)
	}

	// Started: the generator answers (here it holds no lease: fenced
	// no-lease), and Starting is not asked again.
	st.set("", "", true)
	if e := errorOf(t, doOn(t, h, req{method: "POST", target: "/v1/ids"})); e.Code != CodeFenced || e.Reason != "no-lease" {
		t.Errorf("POST /v1/ids once started: %+v; want the generator's refusal, fenced no-lease", e)
	}
	st.set(ReasonStarting, "asked again", false)
	if e := errorOf(t, doOn(t, h, req{target: "/readyz"})); e.Code == CodeStarting {
		t.Errorf("/readyz after the start: %+v; Starting was asked again", e)
	}
}

// Draining while starting: health and readiness say shutting_down.
func TestStartingDraining(t *testing.T) {
	f, _ := newStarting(t, 0, nil)
	f.srv.SetDraining()
	for _, target := range []string{"/healthz", "/readyz"} {
		if e := errorOf(t, doOn(t, f.srv.Handler(), req{target: target})); e.Code != CodeShuttingDown {
			t.Errorf("%s while draining: code %q, want shutting_down", target, e.Code)
		}
	}
}
