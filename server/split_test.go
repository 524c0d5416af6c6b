package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestHandlerParts checks the split of the routes between APIHandler and
// AdminHandler: each route is served by exactly one of them, and asked of
// the other answers 404 naming where it is served; Handler serves all.
func TestHandlerParts(t *testing.T) {
	f := newFixture(t, nil, nil)
	api, admin := f.srv.APIHandler(), f.srv.AdminHandler()
	requests := []struct {
		r       req
		onAdmin bool
	}{
		{req{method: "POST", target: "/v1/ids"}, false},
		{req{method: "POST", target: "/v1/ids:batch", body: `{"count":2}`, contentType: "application/json"}, false},
		{req{target: "/v1/ids/" + example + "/decode"}, false},
		{req{target: "/openapi.json"}, false},
		{req{target: "/healthz"}, true},
		{req{target: "/readyz"}, true},
		{req{target: "/metrics"}, true},
	}
	for _, tc := range requests {
		name := tc.r.method + " " + tc.r.target
		if tc.r.method == "" {
			name = "GET " + tc.r.target
		}
		served, other := api, admin
		where := "the main listener" // where it is served
		if tc.onAdmin {
			served, other, where = admin, api, "the admin listener"
		}
		if r := doOn(t, served, tc.r); r.status != http.StatusOK {
			t.Errorf("%s: status %d, body %.200s; want 200 where it is served", name, r.status, r.body)
		}
		r := doOn(t, other, tc.r)
		if r.status != http.StatusNotFound {
			t.Errorf("%s on the other listener: status %d, want 404", name, r.status)
			continue
		}
		if e := errorOf(t, r); e.Code != CodeNotFound || !strings.Contains(e.Message, where) {
			t.Errorf("%s on the other listener: code %q message %q; want not_found naming %s", name, e.Code, e.Message, where)
		}
		if r := doOn(t, f.h, tc.r); r.status != http.StatusOK {
			t.Errorf("%s on Handler: status %d, want 200", name, r.status)
		}
	}
	// Unknown paths and wrong methods answer the same on both.
	for _, h := range []http.Handler{api, admin} {
		if r := doOn(t, h, req{target: "/nope"}); r.status != http.StatusNotFound {
			t.Errorf("/nope: status %d, want 404", r.status)
		}
	}
	if r := doOn(t, admin, req{method: "POST", target: "/healthz"}); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz on the admin handler: status %d, want 405", r.status)
	}
	// A request refused for its listener counts as unmatched.
	body := doOn(t, admin, req{target: "/metrics"}).body
	if !strings.Contains(body, `snowfence_http_requests_total{code="404",endpoint="unmatched"}`) {
		t.Errorf("/metrics has no unmatched 404s for the routes asked of the wrong listener:\n%.2000s", body)
	}
}

// doOn serves r with h.
func doOn(t *testing.T, h http.Handler, r req) response {
	t.Helper()
	var f fixture
	f.t, f.h = t, h
	return f.do(r)
}
