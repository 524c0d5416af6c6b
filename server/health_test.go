package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

func TestHealthz(t *testing.T) {
	ls := &fixedStatus{s: lease.Status{State: lease.StateHeld, Machine: 37, Holder: "host/1/2"}}
	f := newFixture(t, nil, func(c *Config) { c.Lease = ls })
	r := f.do(req{target: "/healthz"})
	if r.status != http.StatusOK {
		t.Fatalf("healthz: status %d, body %s", r.status, r.body)
	}
	var h healthJSON
	if err := json.Unmarshal([]byte(r.body), &h); err != nil {
		t.Fatal(err)
	}
	if h.Status != "ok" || !h.Issuing || h.Machine != 37 || h.Layout != "v1" || h.Lease == nil || h.Lease.State != lease.StateHeld {
		t.Errorf("healthz body %s: want ok, issuing, machine 37, v1, lease held", r.body)
	}
	if h.UntilFenceMs != nil {
		t.Errorf("until_fence_ms = %d for a static lease, want absent", *h.UntilFenceMs)
	}
	if r := f.do(req{target: "/readyz"}); r.status != http.StatusOK || r.body != `{"ready":true}` {
		t.Errorf("readyz: %d %s", r.status, r.body)
	}

	f.srv.SetDraining()
	for _, target := range []string{"/healthz", "/readyz"} {
		r := f.do(req{target: target})
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("%s while draining: status %d, want 503", target, r.status)
		}
		if e := errorOf(t, r); e.Code != CodeShuttingDown || !strings.Contains(e.Message, "shutting down") {
			t.Errorf("%s while draining: code %q message %q", target, e.Code, e.Message)
		}
	}
	// Draining does not stop minting: requests still in flight are served.
	if r := f.post("/v1/ids", ""); r.status != http.StatusOK {
		t.Errorf("mint while draining: status %d", r.status)
	}
}

func TestHealthzNoLeaseYet(t *testing.T) {
	ls := &fixedStatus{s: lease.Status{State: lease.StateClaiming, Machine: -1}}
	f := newFixture(t, func(c *snowfence.Config) { c.Lease = nilLease{} }, func(c *Config) { c.Lease = ls })
	r := f.do(req{target: "/healthz"})
	if r.status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", r.status)
	}
	e := errorOf(t, r)
	if e.Code != CodeFenced || e.Reason != "no-lease" || !strings.HasPrefix(e.Message, "no lease yet") {
		t.Errorf("error %+v: want fenced, no-lease, \"no lease yet…\"", e)
	}
	var b errorBody
	if err := json.Unmarshal([]byte(r.body), &b); err != nil || b.Health == nil || b.Health.Status != "refusing" || b.Health.Lease == nil {
		t.Errorf("body %s: want the health with status refusing and the lease (%v)", r.body, err)
	}
}

func TestHealthRefusalCodes(t *testing.T) {
	tests := []struct {
		h    snowfence.Health
		want string
	}{
		{snowfence.Health{Reason: "fenced", Err: &snowfence.FencedError{Reason: "renewal-overdue", Detail: "late"}}, CodeFenced},
		{snowfence.Health{Reason: "clock-backwards", Err: &snowfence.ClockBackwardsError{Step: 40 * time.Millisecond}}, CodeClockBackwards},
		{snowfence.Health{Reason: "clock-unsynchronized", Err: fmt.Errorf("%w: no ntpd", snowfence.ErrClockUnsynchronized)}, CodeClockUnsynchronized},
		{snowfence.Health{Reason: "layout", Err: fmt.Errorf("%w: past", snowfence.ErrLayoutExhausted)}, CodeLayoutExhausted},
		{snowfence.Health{Reason: "layout", Err: fmt.Errorf("%w: no fit", snowfence.ErrNoLayout)}, CodeNoLayout},
		{snowfence.Health{Reason: "closed", Err: snowfence.ErrClosed}, CodeClosed},
		{snowfence.Health{Reason: "new-reason"}, CodeUnavailable},
	}
	for _, tt := range tests {
		e := healthRefusal(tt.h, nil)
		if e.code != tt.want || e.message == "" {
			t.Errorf("healthRefusal(%q, %q) = %q %q, want %q", tt.h.Reason, tt.h.Detail, e.code, e.message, tt.want)
		}
	}
	if e := healthRefusal(tests[0].h, nil); e.reason != "renewal-overdue" {
		t.Errorf("fenced reason = %q, want renewal-overdue", e.reason)
	}
}

// A holder whose lease has not started (a claim's notice window) reports
// how long until its first ID, and no countdown to the fence: the status
// page counted down to the fence beside "Not issuing".
func TestHealthzBeforeTheLeaseStarts(t *testing.T) {
	startMs := exampleTime.Add(time.Minute).UnixMilli()
	f := newFixture(t, func(c *snowfence.Config) {
		c.Lease = grantLease{&snowfence.Grant{Machine: 37, Token: 1, StartMs: startMs, LimitMs: startMs + 60_000}}
	}, nil)
	r := f.do(req{target: "/healthz"})
	var b errorBody
	if err := json.Unmarshal([]byte(r.body), &b); err != nil || r.status != http.StatusServiceUnavailable || b.Health == nil {
		t.Fatalf("healthz before the start: %d %s (%v)", r.status, r.body, err)
	}
	if h := b.Health; h.UntilFenceMs != nil || h.UntilStartMs == nil || *h.UntilStartMs <= 50_000 || *h.UntilStartMs > 60_000 {
		t.Errorf("until_fence_ms %v, until_start_ms %v; want no fence and about a minute to the start", h.UntilFenceMs, h.UntilStartMs)
	}
	r = f.do(req{target: "/v1/status"})
	if !strings.Contains(r.body, `"until_start_ms":`) || strings.Contains(r.body, `"until_fence_ms":`) {
		t.Errorf("/v1/status before the start: %s; want until_start_ms and no until_fence_ms", r.body)
	}
}
