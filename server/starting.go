package server

import (
	"net/http"
)

// Reasons the health gives, with code "starting", while Config.Starting
// says the service has not started issuing.
const (
	// ReasonStarting: the service has not yet claimed a machine number,
	// or its first grant has not started (the claim's notice window).
	ReasonStarting = "starting"
	// ReasonNoFreeNumber: every machine number in the service's range is
	// held (or quarantined); it claims again until one frees.
	ReasonNoFreeNumber = "no-free-number"
)

// The starting mode. A service whose keeper claims in the background (a
// spare waiting for a number among them) serves its Server from the start:
// until Config.Starting first says it has started, every route that needs
// the generator answers 503 starting with Retry-After, /healthz and /readyz
// answer 503 starting with the reason (so load balancers send it nothing),
// and /v1/status says "starting"; /metrics, /openapi.json and the status
// page are served as ever (route.starting). Once started it is not asked
// again: later refusals are the generator's own (fenced, no-lease, …).

// startingNow returns the reason and detail while the service is starting;
// ok is false once it has started, or without Config.Starting.
func (s *Server) startingNow() (reason, detail string, ok bool) {
	if s.starting == nil || s.started.Load() {
		return "", "", false
	}
	if reason, detail, ok = s.starting(); !ok {
		s.started.Store(true)
	}
	return reason, detail, ok
}

// startingRegion is the region the starting health reports: the lease's.
func (s *Server) startingRegion() int {
	if s.lease == nil {
		return 0
	}
	return s.lease.Status().Region
}

// refuseStarting answers a route that needs the generator while starting:
// 503 starting (or shutting_down on health and readiness once draining),
// with the health on /healthz and /readyz.
func (s *Server) refuseStarting(w http.ResponseWriter, r *http.Request, reason, detail string) int {
	h := &healthJSON{Status: "starting", Reason: reason, Detail: detail, Machine: -1, Region: s.startingRegion()}
	e := &apiError{status: http.StatusServiceUnavailable, code: CodeStarting, reason: reason,
		message: "not issuing yet: " + reason + ": " + detail}
	isHealth := r.URL.Path == "/healthz" || r.URL.Path == "/readyz"
	if isHealth && s.draining.Load() {
		h.Status = "shutting_down"
		e = &apiError{status: http.StatusServiceUnavailable, code: CodeShuttingDown, message: "shutting down before the service started"}
	}
	if !isHealth {
		h = nil
	}
	return s.writeErrorHealth(w, e, h)
}

// statusStarting answers GET /v1/status while starting: not issuing, the
// reason and detail, no machine number, and the fleet.
func (s *Server) statusStarting(w http.ResponseWriter, r *http.Request, reason, detail string) int {
	h := holderStatus{Status: "starting", Reason: reason, Detail: detail, Machine: -1, Region: s.startingRegion()}
	if s.draining.Load() {
		h.Status = "shutting_down"
	}
	if s.names != nil {
		h.RegionName = regionName(s.names, h.Region)
	}
	return s.writeJSON(w, &statusJSON{
		NowMs:   s.clock.Now().WallMs,
		Holder:  h,
		Fleet:   s.fleet.read(r.Context(), s.names),
		Layouts: layoutsOf(s.schedule),
	})
}
