package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/api"
	"github.com/snowfence/snowfence/lease"
)

// Reasons a Starting gives in "reason" and in the health's reason.
const (
	// ReasonStarting: the service has not yet tried to claim a machine
	// number, or is still trying for the first time.
	ReasonStarting = "starting"
	// ReasonNoFreeNumber: every machine number in the service's range is
	// held (or quarantined); it claims again until one frees.
	ReasonNoFreeNumber = "no-free-number"
)

// StartingConfig configures a Starting. Every field may be left zero.
type StartingConfig struct {
	// Gatherer is what /metrics serves while starting, such as the
	// registry the Server will register its metrics on. Nil: a fresh
	// registry of its own with the Go and process collectors.
	Gatherer prometheus.Gatherer
	// Region is the region number the health reports. Zero: region 0.
	Region int
	// Logger receives promhttp's errors. Nil discards them.
	Logger *slog.Logger
	// Fleet and RegionNames are the status page's, as in Config: a spare
	// waiting for a number shows the fleet that holds them. Nil: the page
	// says the fleet is not available; regions are numbers.
	Fleet       func(ctx context.Context) ([]lease.Record, error)
	RegionNames func(number int) (string, bool)
	// Schedule is the schedule the status page's bit picture draws. Zero
	// means snowfence.DefaultSchedule().
	Schedule snowfence.Schedule
}

// A Starting answers for a service whose generator is not running yet, such
// as a spare waiting for a machine number to free, on the same routes as a
// Server: /healthz and /readyz answer 503 with code "starting", the reason
// set by SetReason and its detail (so load balancers send it nothing); the
// minting and decode routes answer 503 starting with Retry-After and issue
// nothing; /metrics serves StartingConfig.Gatherer and /openapi.json the
// API description; the status page is served, its JSON saying "starting"
// with the reason. It splits its routes the way a Server does (Handler,
// APIHandler, AdminHandler), so a service swaps each of its listeners'
// handlers from a Starting's to its Server's once the generator runs. It
// counts no requests: a Server's metrics start with the Server.
//
// A Starting is safe for concurrent use.
type Starting struct {
	srv      *Server // routes and writers only: no generator
	state    atomic.Pointer[startingState]
	region   int
	draining atomic.Bool
}

// startingState is what SetReason set.
type startingState struct{ reason, detail string }

// NewStarting returns a Starting whose reason is ReasonStarting.
func NewStarting(cfg StartingConfig) *Starting {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if len(cfg.Schedule.Steps()) == 0 {
		cfg.Schedule = snowfence.DefaultSchedule()
	}
	st := &Starting{region: cfg.Region}
	st.state.Store(&startingState{reason: ReasonStarting, detail: "claiming a machine number"})
	s := &Server{
		log:        cfg.Logger,
		routes:     routes(),
		openAPI:    api.OpenAPI(),
		jsonType:   []string{"application/json"},
		retryAfter: []string{"1"},
		nosniff:    []string{"nosniff"},
		schedule:   cfg.Schedule,
		names:      cfg.RegionNames,
		clock:      snowfence.SystemClock(),
	}
	s.fleet = newFleetCache(cfg.Fleet, s.clock)
	gath := cfg.Gatherer
	if gath == nil {
		own := prometheus.NewRegistry()
		own.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		gath = own
	}
	s.metricsHandler = promhttp.HandlerFor(gath, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelError),
	})
	for i := range s.routes {
		switch rt := &s.routes[i]; rt.pattern {
		case "/openapi.json", "/metrics", "/", "/status/{asset}":
		case "/v1/status":
			rt.serve = st.status
		default:
			rt.serve = st.refuse
		}
	}
	st.srv = s
	return st
}

// SetReason sets the reason the health gives, such as ReasonNoFreeNumber,
// and its detail, such as the last claim's error.
func (st *Starting) SetReason(reason, detail string) {
	st.state.Store(&startingState{reason: reason, detail: detail})
}

// SetDraining marks the service as shutting down: /healthz and /readyz
// answer 503 "shutting_down" from now on. It cannot be undone.
func (st *Starting) SetDraining() { st.draining.Store(true) }

// Handler returns the handler of every route on one listener.
func (st *Starting) Handler() http.Handler { return startingHandler{st.srv, allRoutes} }

// APIHandler returns the main listener's handler when health and metrics
// are apart, as Server.APIHandler.
func (st *Starting) APIHandler() http.Handler { return startingHandler{st.srv, apiRoutes} }

// AdminHandler returns the admin listener's handler, as
// Server.AdminHandler.
func (st *Starting) AdminHandler() http.Handler { return startingHandler{st.srv, adminRoutes} }

// refuse answers every route that needs the generator: 503 starting (or
// shutting_down on health and readiness once draining), with the health.
func (st *Starting) refuse(s *Server, w http.ResponseWriter, r *http.Request, _ string) int {
	state := st.state.Load()
	h := &healthJSON{Status: "starting", Reason: state.reason, Detail: state.detail, Machine: -1, Region: st.region}
	e := &apiError{status: http.StatusServiceUnavailable, code: CodeStarting, reason: state.reason,
		message: "not issuing yet: " + state.reason + ": " + state.detail}
	isHealth := r.URL.Path == "/healthz" || r.URL.Path == "/readyz"
	if isHealth && st.draining.Load() {
		h.Status = "shutting_down"
		e = &apiError{status: http.StatusServiceUnavailable, code: CodeShuttingDown, message: "shutting down before the service started"}
	}
	if !isHealth {
		h = nil
	}
	return s.writeErrorHealth(w, e, h)
}

// status answers GET /v1/status while starting: not issuing, the reason
// and detail SetReason set, no machine number, and the fleet.
func (st *Starting) status(s *Server, w http.ResponseWriter, r *http.Request, _ string) int {
	state := st.state.Load()
	h := holderStatus{Status: "starting", Reason: state.reason, Detail: state.detail, Machine: -1, Region: st.region}
	if st.draining.Load() {
		h.Status = "shutting_down"
	}
	if s.names != nil {
		h.RegionName = regionName(s.names, st.region)
	}
	return s.writeJSON(w, &statusJSON{
		NowMs:   s.clock.Now().WallMs,
		Holder:  h,
		Fleet:   s.fleet.read(r.Context(), s.names),
		Layouts: layoutsOf(s.schedule),
	})
}

// startingHandler serves one part of a Starting's routes.
type startingHandler struct {
	s    *Server
	part part
}

func (h startingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ep, param := match(h.s.routes, r.URL.Path)
	h.s.serve(h.part, &ep, param, w, r)
}
