package server

import (
	"encoding/json"
	"net/http"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// healthJSON is the body of /healthz and /readyz (inside "health" on a 503).
type healthJSON struct {
	// Status is "ok", "refusing" or "shutting_down"; "starting" while
	// Config.Starting says so.
	Status  string `json:"status"`
	Issuing bool   `json:"issuing"`
	// Reason and Detail are the generator's refusal, if any.
	Reason   string   `json:"reason,omitempty"`
	Detail   string   `json:"detail,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	Machine  int      `json:"machine"`
	Region   int      `json:"region"`
	Layout   string   `json:"layout,omitempty"`
	// UntilFenceMs is the wall time left before the lease's mark; absent
	// with no lease, and while the lease has not started (UntilStartMs).
	UntilFenceMs *int64 `json:"until_fence_ms,omitempty"`
	// UntilStartMs is the time left before a lease not yet started (a
	// claim's notice window) may issue; absent otherwise.
	UntilStartMs *int64                 `json:"until_start_ms,omitempty"`
	Clock        *snowfence.ClockStatus `json:"clock,omitempty"`
	Lease        *lease.Status          `json:"lease,omitempty"`
}

// check reads the generator's and lease's health. It returns the error
// response to send, or nil while issuing and not draining.
func (s *Server) check() (*healthJSON, *apiError) {
	h := s.gen.Health()
	out := &healthJSON{
		Status:   "ok",
		Issuing:  h.Issuing,
		Reason:   h.Reason,
		Detail:   h.Detail,
		Warnings: h.Warnings,
		Machine:  h.Machine,
		Region:   h.Region,
		Layout:   h.Layout,
	}
	switch {
	case h.UntilStart > 0:
		ms := h.UntilStart.Milliseconds()
		out.UntilStartMs = &ms
	case h.HasFence:
		ms := h.UntilFence.Milliseconds()
		out.UntilFenceMs = &ms
	}
	if h.Clock != (snowfence.ClockStatus{}) {
		out.Clock = &h.Clock
	}
	var ls *lease.Status
	if s.lease != nil {
		st := s.lease.Status()
		ls = &st
		out.Lease = ls
	}
	var e *apiError
	if !h.Issuing {
		out.Status = "refusing"
		e = healthRefusal(h, ls)
	}
	if s.draining.Load() {
		out.Status = "shutting_down"
		e = &apiError{status: http.StatusServiceUnavailable, code: CodeShuttingDown, message: "shutting down: the server is draining"}
	}
	return out, e
}

// healthRefusal maps a generator's refusal, as Health reports it, to the
// code a refused mint would carry.
func healthRefusal(h snowfence.Health, ls *lease.Status) *apiError {
	if h.Err == nil {
		return &apiError{status: http.StatusServiceUnavailable, code: CodeUnavailable, message: "not issuing: " + h.Reason}
	}
	e := refusal(h.Err)
	if e.code == CodeFenced && (e.reason == "no-lease" || ls != nil && ls.State == lease.StateClaiming) {
		e.reason = "no-lease"
		e.message = "no lease yet: " + e.message
	}
	return e
}

// healthz answers GET /healthz: 200 with the health while issuing, 503 with
// the reason while refusing or draining.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request, _ string) int {
	h, e := s.check()
	if e != nil {
		return s.writeErrorHealth(w, e, h)
	}
	return s.writeJSON(w, h)
}

// readyz answers GET /readyz: 200 {"ready":true} while the server should
// get traffic (issuing, not draining), else 503 with the reason.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request, _ string) int {
	h, e := s.check()
	if e != nil {
		return s.writeErrorHealth(w, e, h)
	}
	return s.writeJSON(w, struct {
		Ready bool `json:"ready"`
	}{true})
}

// writeJSON writes v as a 200 JSON response.
func (s *Server) writeJSON(w http.ResponseWriter, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return s.writeError(w, &apiError{status: http.StatusInternalServerError, code: CodeInternal, message: err.Error()})
	}
	hdr := w.Header()
	hdr["Content-Type"] = s.jsonType
	hdr["Cache-Control"] = []string{"no-store"}
	w.Write(b)
	return http.StatusOK
}
