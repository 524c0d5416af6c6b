package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/api"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/metrics"
	"github.com/snowfence/snowfence/publicid"
)

// DefaultMaxBodyBytes is the largest request body taken when
// Config.MaxBodyBytes is zero. A batch body is about 20 bytes.
const DefaultMaxBodyBytes = 4096

// futureSkew is how far past the server's clock a decoded ID's timestamp may
// lie before decode warns that it is in the future (WarningInFuture): IDs
// minted on a machine whose clock runs a little ahead carry no warning.
const futureSkew = time.Second

// StatusReporter reports the state of the lease behind the generator;
// *lease.Keeper is one. It is metrics.StatusReporter, which the lease's
// series read.
type StatusReporter = metrics.StatusReporter

// Config configures a Server. Every field but Generator may be left zero.
type Config struct {
	// Generator mints the IDs. Required. The server does not close it.
	Generator *snowfence.Generator
	// Schedule decodes IDs for /v1/ids/{id}/decode; it should be the
	// generator's. Zero means snowfence.DefaultSchedule().
	Schedule snowfence.Schedule
	// Lease, if set, adds the lease's state to /healthz and /metrics.
	// When it is also a StallReporter (a *lease.Keeper is), /livez answers
	// 503 while it reports its loop wedged (livez.go).
	Lease StatusReporter
	// Logger receives the server's few log lines (none per request at
	// Info). Nil discards them.
	Logger *slog.Logger
	// Registerer is where the server registers its metrics, and Gatherer is
	// what /metrics serves. With both nil the server uses a fresh registry of
	// its own, with the Go and process collectors added. With only
	// Registerer set it must also be a Gatherer (a *prometheus.Registry is).
	// With only Gatherer set, /metrics serves it merged with a fresh registry
	// holding the server's metrics. The server never touches the global
	// default registry.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// MaxBodyBytes is the largest request body accepted; larger ones get a
	// 413. Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Clock is used to refuse decoding IDs timestamped in the future, and
	// is the clock of the UUID generator made when UUIDs is nil. Nil
	// means snowfence.SystemClock().
	Clock snowfence.Clock
	// RegionNames, if set, names region numbers for
	// /v1/ids/{id}/decode (snowfence.Schedule.DecodeNamed): it returns
	// the region registry's name of a number, false for a number the
	// registry does not know. It is called on every decode request and
	// never on the mint path; it must be safe for concurrent use and
	// should answer from memory. Nil: "region" is the number in decimal.
	RegionNames func(number int) (string, bool)
	// RegionNumbers, if set, is called on every scrape of /metrics for
	// the region numbers the region registry has left (registry.Registry.Left)
	// out of the total the fleet schedule's last layout has (1 <<
	// RegionBits), exported as snowfence_region_numbers_left and
	// snowfence_region_numbers; a total of zero (no region bits) exports
	// neither (metrics.Config.RegionNumbers; metrics.RegionNumbers
	// computes both). It must be safe for concurrent use and should
	// answer from memory. Nil: neither is exported.
	RegionNumbers func() (left, total int)
	// Quota, if set, is asked before every mint whether the caller may
	// take that many IDs (see Quota); over quota is a 429. Nil: no quota,
	// and the mint path does no per-caller work.
	Quota Quota
	// UUIDs makes the UUIDv7 values of POST /v1/uuids. Nil: a generator of
	// the server's own on Clock (snowfence.NewUUIDGenerator).
	UUIDs *snowfence.UUIDGenerator
	// PublicIDKeys, if set, is the keyset with which POST /v1/public-ids
	// seals IDs and GET /v1/public-ids/{pid} opens them. Nil: both answer
	// 501 public_ids_disabled.
	PublicIDKeys *publicid.Keyset
	// PublicIDOpeners decides which callers may open sealed public IDs
	// (see PublicIDOpeners). Nil: none may (403 forbidden).
	PublicIDOpeners PublicIDOpeners
	// PublicIDSealers decides which callers may seal IDs of their
	// choosing, POST /v1/public-ids (see PublicIDSealers). Nil: none may
	// (403 forbidden). Minting sealed IDs, POST /v1/public-ids:mint, is
	// for every caller Quota admits, either way.
	PublicIDSealers PublicIDSealers
	// Fleet, if set, reads every record of the lease store (lease.Store's
	// List) for the status page's fleet table (GET /v1/status); the
	// regions are named through RegionNames. It is called at most once a
	// second however many pages poll, with a 2 s timeout, and never on the
	// mint path. Nil: the page says the fleet is not available, as for a
	// server a library embeds.
	Fleet func(ctx context.Context) ([]lease.Record, error)
	// Starting, if set, says whether the service has not started issuing
	// yet — its keeper holds no machine number yet, or a spare waits for
	// one to free, or the first grant's notice window runs — with the
	// reason (ReasonStarting or ReasonNoFreeNumber) and its detail (the
	// last claim's error). Until it first answers false, every route that
	// needs the generator answers 503 with code starting and Retry-After,
	// /healthz and /readyz answer 503 starting (status "starting", machine
	// -1, the Lease's region), and GET /v1/status says "starting";
	// /metrics, /openapi.json and the status page are served. It is not
	// called again once it has answered false, nor on the mint path after
	// that. It must be safe for concurrent use. Nil: the server has
	// started from New on, and every refusal is the generator's.
	Starting func() (reason, detail string, starting bool)
}

// Server is the HTTP service in front of one generator. Serve its Handler
// with an http.Server.
type Server struct {
	gen      *snowfence.Generator
	schedule snowfence.Schedule
	lease    StatusReporter
	log      *slog.Logger
	clock    snowfence.Clock
	names    func(int) (string, bool) // nil: no region names
	quota    Quota                    // nil: no quota
	uuids    *snowfence.UUIDGenerator
	// publicIDs seals and opens public IDs (nil: disabled); openers says
	// who may open, sealers who may seal IDs of its choosing (nil:
	// nobody).
	publicIDs *publicid.Keyset
	openers   PublicIDOpeners
	sealers   PublicIDSealers
	fleet     *fleetCache
	maxBody   int64
	draining  atomic.Bool
	// starting is Config.Starting; started is set once it answered false
	// (starting.go).
	starting func() (reason, detail string, starting bool)
	started  atomic.Bool
	// origin is the zero of request timing.
	origin time.Time

	routes         []route
	metrics        *requestMetrics
	metricsHandler http.Handler
	openAPI        []byte

	// Header values shared by every response; net/http only reads them.
	// noStore is on every 200 of a mint: an ID answer must never be
	// replayed from a cache (a replayed answer hands the same IDs out
	// twice).
	jsonType, retryAfter, nosniff, noStore []string

	// single holds *[]byte buffers for one-ID responses; batch holds
	// *batchBuffers.
	single, batch sync.Pool
	// uuidBufs holds *uuidBuffers.
	uuidBufs sync.Pool
}

// New checks cfg, registers the server's metrics and returns the server.
func New(cfg Config) (*Server, error) {
	if cfg.Generator == nil {
		return nil, fmt.Errorf("%w: server: Config.Generator is nil", snowfence.ErrInvalidConfig)
	}
	if len(cfg.Schedule.Steps()) == 0 {
		cfg.Schedule = snowfence.DefaultSchedule()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case cfg.MaxBodyBytes == 0:
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	case cfg.MaxBodyBytes < 0:
		return nil, fmt.Errorf("%w: server: Config.MaxBodyBytes is %d; use a positive size, or zero for %d", snowfence.ErrInvalidConfig, cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	}
	if cfg.Clock == nil {
		cfg.Clock = snowfence.SystemClock()
	}
	if cfg.UUIDs == nil {
		cfg.UUIDs = snowfence.NewUUIDGenerator(cfg.Clock)
	}
	reg, gath := cfg.Registerer, cfg.Gatherer
	switch {
	case reg == nil:
		own := prometheus.NewRegistry()
		if gath == nil {
			if err := own.Register(collectors.NewGoCollector()); err != nil {
				return nil, err
			}
			if err := own.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
				return nil, err
			}
			gath = own
		} else {
			gath = prometheus.Gatherers{gath, own}
		}
		reg = own
	case gath == nil:
		g, ok := reg.(prometheus.Gatherer)
		if !ok {
			return nil, fmt.Errorf("%w: server: Config.Registerer (%T) is not a prometheus.Gatherer; set Config.Gatherer too", snowfence.ErrInvalidConfig, reg)
		}
		gath = g
	}
	s := &Server{
		gen:        cfg.Generator,
		schedule:   cfg.Schedule,
		lease:      cfg.Lease,
		log:        cfg.Logger,
		clock:      cfg.Clock,
		names:      cfg.RegionNames,
		quota:      cfg.Quota,
		uuids:      cfg.UUIDs,
		publicIDs:  cfg.PublicIDKeys,
		openers:    cfg.PublicIDOpeners,
		sealers:    cfg.PublicIDSealers,
		maxBody:    cfg.MaxBodyBytes,
		fleet:      newFleetCache(cfg.Fleet, cfg.Clock),
		starting:   cfg.Starting,
		routes:     routes(),
		origin:     time.Now(),
		openAPI:    api.OpenAPI(),
		jsonType:   []string{"application/json"},
		retryAfter: []string{"1"},
		nosniff:    []string{"nosniff"},
		noStore:    []string{"no-store"},
	}
	s.single.New = func() any { b := make([]byte, 0, 64); return &b }
	s.batch.New = func() any { return newBatchBuffers() }
	s.uuidBufs.New = func() any { return newUUIDBuffers() }
	gc, err := metrics.New(metrics.Config{Generator: cfg.Generator, Keeper: cfg.Lease, RegionNumbers: cfg.RegionNumbers})
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(reg, s.routes, gc, s.draining.Load)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	s.metricsHandler = promhttp.HandlerFor(gath, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelError),
	})
	return s, nil
}

// Handler returns the server's HTTP handler: every route on one listener.
func (s *Server) Handler() http.Handler { return handler{s, allRoutes} }

// APIHandler returns the handler of the main listener when health and
// metrics have a listener of their own: every route but /healthz, /readyz,
// /livez, /metrics and the status page's, which answer 404 not_found here (so that whatever guards the
// main listener, such as mutual TLS, guards every route it serves).
func (s *Server) APIHandler() http.Handler { return handler{s, apiRoutes} }

// AdminHandler returns the handler of the admin listener: /healthz, /readyz,
// /livez, /metrics and the status page, for load balancers, orchestrators'
// probes, Prometheus and the operator; every other path answers
// 404 not_found. Serve it beside APIHandler, never beside Handler, which
// serves these routes itself. All three handlers share the server's state
// and metrics, and may be used at once.
func (s *Server) AdminHandler() http.Handler { return handler{s, adminRoutes} }

// SetDraining marks the server as shutting down: /healthz and /readyz answer
// 503 "shutting_down" from now on, so load balancers stop sending traffic
// (/livez goes on answering 200: the drain is no wedge),
// while the ID endpoints keep serving the requests that still arrive. Call it
// before http.Server.Shutdown. It cannot be undone.
func (s *Server) SetDraining() {
	if !s.draining.Swap(true) {
		s.log.Info("draining: health and readiness now report shutting down")
	}
}

// handler serves one part of a server's routes.
type handler struct {
	s    *Server
	part part
}

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.s
	// time.Since on a reading with a monotonic clock reads only the
	// monotonic clock: half the cost of time.Now.
	start := time.Since(s.origin)
	ep, param := match(s.routes, r.URL.Path)
	status := s.serve(h.part, &ep, param, w, r)
	s.metrics.observe(ep, status, time.Since(s.origin)-start)
}

// serve dispatches a request to its route and returns the status it
// answered with. A route that part does not serve is answered 404, and *ep
// becomes unmatched.
func (s *Server) serve(p part, ep *endpoint, param string, w http.ResponseWriter, r *http.Request) int {
	if *ep < 0 || int(*ep) >= len(s.routes) {
		return s.writeError(w, &apiError{status: http.StatusNotFound, code: CodeNotFound,
			message: fmt.Sprintf("no such path %s; see /openapi.json", quoteShort(r.URL.Path))})
	}
	rt := &s.routes[*ep]
	if !p.takes(rt) {
		*ep = endpoint(len(s.routes))
		return s.writeError(w, p.elsewhere(rt))
	}
	if !rt.takes(r.Method) {
		w.Header().Set("Allow", rt.allow)
		return s.writeError(w, &apiError{status: http.StatusMethodNotAllowed, code: CodeMethodNotAllowed,
			message: fmt.Sprintf("%s takes %s, not %s", rt.pattern, rt.allow, quoteShort(r.Method))})
	}
	if !rt.starting && s.starting != nil && !s.started.Load() {
		if reason, detail, ok := s.startingNow(); ok {
			return s.refuseStarting(w, r, reason, detail)
		}
	}
	return rt.serve(s, w, r, param)
}

// serveOpenAPI answers GET /openapi.json with api/openapi.json.
func (s *Server) serveOpenAPI(w http.ResponseWriter, _ *http.Request, _ string) int {
	h := w.Header()
	h["Content-Type"] = s.jsonType
	h["Cache-Control"] = []string{"public, max-age=300"}
	w.Write(s.openAPI)
	return http.StatusOK
}

// serveMetrics answers GET /metrics: it runs promhttp, capturing the status
// it writes.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request, _ string) int {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.metricsHandler.ServeHTTP(sw, r)
	return sw.status
}

// statusWriter records the status code of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
