package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/metrics"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/perimeter"
	"github.com/snowfence/snowfence/publicid"
	"github.com/snowfence/snowfence/server"
)

// ReleaseTimeout bounds the release of the machine number in Shutdown, on a
// context of its own: a drain that used all of Shutdown's context still
// releases.
const ReleaseTimeout = 5 * time.Second

// Config configures a Service. The zero value serves a holder on an
// embedded etcd in ./snowfence-data (node.Config's zero value) in region 0,
// plain HTTP without quotas, public IDs disabled.
type Config struct {
	// Node configures the lease store, the keeper and the generator (see
	// node.Config). Node.Open opens the store (nil: the embedded etcd);
	// Node.Store, if set, is a store the caller opened and closes. The
	// keeper's region is Region's number; its high-water mark, when
	// Node.Keeper has none, the Opener's. Node.Logger, when nil, is Logger.
	Node node.Config
	// Region is the holder's region: its name in the region registry of
	// the holder's own store, or its number. It is resolved from that
	// registry before anything is claimed (registry.Registry.Resolve): an
	// unknown or retired region is refused with the command that fixes it,
	// and a name is known only there; with no registry written a number is
	// taken as it is. Empty: Node.Keeper.Region, unresolved.
	Region string
	// EmbeddedEtcdStore is the etcd store configuration (its Prefix) with
	// which Node.Open reaches the embedded etcd, when it starts one: the
	// region registry is read on the embedded etcd, which the holder then
	// keeps rather than start it twice (node.OnEmbedded). Zero: the
	// default prefix.
	EmbeddedEtcdStore etcdstore.Config
	// Perimeter is the main listener's mutual TLS and quotas (package
	// perimeter); its Registerer and Logger, when nil, are Registry and
	// Logger. Its files are read in New: a bad certificate or callers file
	// refuses the start. Zero: plain HTTP, every caller anonymous, no quota.
	Perimeter perimeter.Config
	// PublicIDKeys, if set, seals and opens public IDs
	// (server.Config.PublicIDKeys). Nil: both routes answer 501.
	PublicIDKeys *publicid.Keyset
	// PublicIDOpeners decides who may open public IDs. Nil: the callers
	// the perimeter's callers file grants "open_public_ids"; use
	// server.AnyCallerOpens{} for a listener only trusted callers reach.
	PublicIDOpeners server.PublicIDOpeners
	// PublicIDSealers decides who may seal IDs of their choosing (POST
	// /v1/public-ids). Nil: the callers the perimeter's callers file
	// grants "seal_public_ids"; use server.AnyCallerOpens{} for a
	// listener only trusted callers reach. Every caller the perimeter
	// admits may mint sealed IDs (POST /v1/public-ids:mint).
	PublicIDSealers server.PublicIDSealers
	// Registry is where the service registers its metrics and what
	// /metrics serves. Nil: a fresh registry with the Go and process
	// collectors.
	Registry *prometheus.Registry
	// APIMiddleware, if set, wraps the main listener's handler (behind the
	// perimeter), e.g. to add a route of the embedding service's own.
	APIMiddleware func(http.Handler) http.Handler
	// Logger receives the service's, store's, keeper's and generator's
	// logs. Nil discards them.
	Logger *slog.Logger
	// MaxConns caps the open connections of each listener (the API
	// listener and the admin listener each). The listeners together also
	// stay within a budget taken from the process's open-files limit
	// (RLIMIT_NOFILE, read in New) minus a reserve kept for the lease
	// store — max(256, a tenth of the limit), at most half of it — and
	// each is sure of a few connections (up to 32) whatever the other
	// holds. Over a cap a new connection takes the place of the longest
	// idle keep-alive connection, or is refused: on plain HTTP with a 503
	// (code "unavailable", reason ReasonTooManyConnections, Retry-After: 1,
	// Connection: close), on TLS by closing it. 0: the budget. Negative or
	// above the budget is refused by New (ConnLimitsError).
	MaxConns int
	// MaxConnsPerPeer caps each listener's open connections from one IP
	// address, as MaxConns does. 0: DefaultMaxConnsPerPeer (or the
	// listener's cap, if lower). Negative or above the budget is refused
	// by New.
	MaxConnsPerPeer int
}

// A Service is a holder that serves HTTP: it opens the lease store, starts
// the keeper (which enforces the region, home and schedule rules itself,
// and claims its machine number in the background), the generator and the
// HTTP service (package server, behind the perimeter), serves on the
// listeners it is given, and on Shutdown drains and releases the number at
// the generator's last issued mark. It is what "snowfence serve" runs, and
// it is shaped like http.Server: New, Serve, Shutdown.
//
// Until its keeper holds a number (a spare waits as long as every number of
// its range is held) and the claim's first grant has started, it answers
// 503 "starting" (server.Config.Starting); Ready is closed then. A first
// claim refused for good, or a failed embedded etcd, closes Done; Err says
// why, and the owner shuts the service down.
type Service struct {
	cfg    Config
	log    *slog.Logger
	region registry.Region
	opened *node.Opened // nil for Node.Store
	node   *node.Node
	srv    *server.Server
	perim  *perimeter.Perimeter
	names  *regionNames
	reg    *prometheus.Registry
	limits *connLimits

	ready, waiting chan struct{}
	done           chan struct{}
	stop           context.CancelFunc // ends the watchers
	watchers       sync.WaitGroup

	mu       sync.Mutex
	err      error
	servers  []*listened
	shutdown bool
	served   chan struct{} // closed by Shutdown: Serve returns
}

// New opens the lease store, resolves Region from its registry, starts the
// keeper (lease.StartKeeper: the registry's rules are checked before it
// returns, and it claims in the background), the generator and the HTTP
// service, and returns at once: serve it with Serve. ctx bounds opening
// the store and reading its registry. On error everything started is
// stopped again.
func New(ctx context.Context, cfg Config) (_ *Service, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Node.Logger == nil {
		cfg.Node.Logger = cfg.Logger
	}
	s := &Service{cfg: cfg, log: cfg.Logger, ready: make(chan struct{}), waiting: make(chan struct{}), done: make(chan struct{}), served: make(chan struct{})}
	if s.reg = cfg.Registry; s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	fdLimit, err := openFilesLimit()
	if err != nil {
		return nil, err
	}
	caps, err := connCapsFor(cfg, fdLimit)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	cm, err := newConnMetrics(s.reg, caps)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cm.unregister(s.reg)
		}
	}()
	s.limits = newConnLimits(caps, cm, cfg.Logger)
	// The perimeter's files are read before the store is opened: a bad
	// certificate or callers file stops the start at once.
	pc := cfg.Perimeter
	if pc.Registerer == nil {
		pc.Registerer = s.reg
	}
	if pc.Logger == nil {
		pc.Logger = cfg.Logger
	}
	if s.perim, err = perimeter.New(pc); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	defer func() {
		if err != nil {
			s.perim.Close()
		}
	}()
	nc := cfg.Node
	hr := holderRegion{registry: registry.Registry{}, region: registry.Region{Number: nc.Keeper.Region}}
	if nc.Store == nil {
		if hr, err = s.openStore(ctx, nc); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				closeOpened(s.opened)
			}
		}()
		nc.Open, nc.Store = nil, s.opened.Store
		if !nc.TimingsChosen {
			s.opened.Timings.Apply(&nc.Keeper)
		}
		if nc.Keeper.HighWater == nil {
			nc.Keeper.HighWater = s.opened.HighWater // the embedded etcd's file beside its data directory
		}
	} else if cfg.Region != "" {
		if hr, err = resolveHolderRegion(ctx, func(context.Context, int, *slog.Logger) (*node.Opened, error) {
			return &node.Opened{Store: nc.Store, Close: func() error { return nil }}, nil
		}, cfg.EmbeddedEtcdStore, cfg.Region, cfg.Logger); err != nil {
			return nil, fmt.Errorf("start: %w", err)
		}
	}
	if s.opened != nil && s.opened.Embedded != nil {
		node.EmbeddedClockDefault(&nc.Generator, s.log)
	}
	s.region = hr.region
	nc.Keeper.Region = hr.region.Number
	if s.node, err = node.Launch(ctx, nc); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	if s.opened != nil {
		s.node.Embedded = s.opened.Embedded
	}
	if err := s.startServer(hr); err != nil {
		s.node.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	wctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.watchers.Add(2)
	go s.watchClaim(wctx)
	go s.watchFailure(wctx)
	if pc.CallersFile != "" {
		s.watchers.Add(1)
		go s.countHolders(wctx)
	}
	return s, nil
}

// openStore resolves Region from the holder's own store and opens the store
// the keeper claims from.
func (s *Service) openStore(ctx context.Context, nc node.Config) (holderRegion, error) {
	open := nc.Open
	if open == nil {
		open = node.EmbeddedEtcd(embedetcd.Config{}, s.cfg.EmbeddedEtcdStore)
	}
	text := s.cfg.Region
	if text == "" {
		text = fmt.Sprint(nc.Keeper.Region)
	}
	hr, err := resolveHolderRegion(ctx, open, s.cfg.EmbeddedEtcdStore, text, s.log)
	if err != nil {
		return hr, fmt.Errorf("start: %w", err)
	}
	defer hr.release()
	if s.opened, err = hr.open(ctx, hr.region.Number, nc.Logger); err != nil {
		return hr, fmt.Errorf("start: %w", err)
	}
	return hr, nil
}

// startServer builds the HTTP service on the node.
func (s *Service) startServer(hr holderRegion) (err error) {
	n, gc := s.node, s.cfg.Node.Generator
	// The server's clock is the generator's: decode's future check and
	// the UUIDv7s of POST /v1/uuids read the same time as the IDs.
	sc := server.Config{Generator: n.Generator, Schedule: n.Keeper.Schedule(), Lease: n.Keeper, Logger: s.log, Registerer: s.reg,
		Quota: s.perim.Quota(), Clock: gc.Clock, Fleet: fleetOf(n.Store), Starting: s.starting}
	if s.cfg.PublicIDKeys != nil {
		sc.PublicIDKeys, sc.PublicIDOpeners, sc.PublicIDSealers = s.cfg.PublicIDKeys, s.cfg.PublicIDOpeners, s.cfg.PublicIDSealers
		if sc.PublicIDOpeners == nil {
			sc.PublicIDOpeners = s.perim
		}
		if sc.PublicIDSealers == nil {
			sc.PublicIDSealers = s.perim
		}
	}
	s.names = newRegionNames(n.Store.RegistryReader(), hr.registry, s.log, time.Now)
	sc.RegionNames = s.names.Name
	// Region numbers left, for the alert on a registry nearly used up:
	// exported once a layout with region bits is in the schedule and a
	// registry was written (metrics.RegionNumbers), from the registry the
	// region names keep in memory.
	sched := sc.Schedule
	sc.RegionNumbers = func() (int, int) { return metrics.RegionNumbers(sched, *s.names.reg.Load()) }
	if s.srv, err = server.New(sc); err != nil {
		return err
	}
	s.names.start()
	return nil
}

// starting is the server's Config.Starting: starting until Ready, with the
// last claim's error (no-free-number for a spare).
func (s *Service) starting() (reason, detail string, starting bool) {
	select {
	case <-s.ready:
		return "", "", false
	default:
	}
	err := s.node.Keeper.ClaimError()
	switch {
	case errors.Is(err, lease.ErrNoFreeNumber):
		return server.ReasonNoFreeNumber, err.Error(), true
	case err != nil:
		return server.ReasonStarting, err.Error(), true
	}
	return server.ReasonStarting, "claiming a machine number", true
}

// watchClaim closes waiting when the first claim finds every number held,
// and ready when the first grant has started.
func (s *Service) watchClaim(ctx context.Context) {
	defer s.watchers.Done()
	if err := s.node.Keeper.ClaimedOrFull(ctx); errors.Is(err, lease.ErrNoFreeNumber) {
		close(s.waiting)
	}
	if err := s.node.WaitIssuing(ctx); err == nil {
		close(s.ready)
	}
}

// countHolders divides callers' quotas among the fleet's live holders
// (holderCount) until ctx ends.
func (s *Service) countHolders(ctx context.Context) {
	defer s.watchers.Done()
	k := s.node.Keeper
	c := &holderCount{store: s.node.Store, clock: k.Clock(), every: k.RenewEvery(), set: s.perim.SetHolders, log: s.log,
		keyspace: func() (int, bool) {
			if l := k.Lease(); l != nil {
				return l.Region, true
			}
			return 0, false
		}}
	c.run(ctx, s.ready)
}

// watchFailure closes done when the keeper stops (lease.Keeper.Failed) or
// the embedded etcd fails.
func (s *Service) watchFailure(ctx context.Context) {
	defer s.watchers.Done()
	var etcdErr <-chan error
	if s.opened != nil && s.opened.Embedded != nil {
		etcdErr = s.opened.Embedded.Err()
	}
	var err error
	select {
	case <-ctx.Done():
		return
	case <-s.node.Keeper.Failed():
		err = fmt.Errorf("start: %w", s.node.Keeper.Err())
	case e := <-etcdErr:
		err = fmt.Errorf("embedded etcd: %w", e)
	}
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	close(s.done)
}

// Ready returns a channel closed once the holder first issues: its keeper
// holds a number and the claim's first grant has started.
func (s *Service) Ready() <-chan struct{} { return s.ready }

// Waiting returns a channel closed when the first claim found every
// machine number of the range held: the service waits as a spare,
// answering 503 starting no-free-number, until one frees (then Ready
// closes). It is about starting only, and closes at most once: a holder
// that later loses its number and finds the range full says so in its
// health (/healthz, lease.Keeper.Status), not here.
func (s *Service) Waiting() <-chan struct{} { return s.waiting }

// Done returns a channel closed when the service cannot go on: its
// keeper's first claim was refused for good (lease.Keeper.Failed: a
// schedule other than the fleet's, say) or the embedded etcd failed. Err
// says why; shut the service down.
func (s *Service) Done() <-chan struct{} { return s.done }

// Err returns why Done was closed, or nil.
func (s *Service) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Node returns the holder: its store, keeper, generator and embedded etcd
// (nil with any other store).
func (s *Service) Node() *node.Node { return s.node }

// Region returns the holder's region as the registry resolved it (only
// Number set when no registry is written).
func (s *Service) Region() registry.Region { return s.region }

// TLS reports whether the main listener is served behind mutual TLS.
func (s *Service) TLS() bool { return s.perim.TLSConfig() != nil }

// Serve serves the API on api, behind the perimeter, and, when admin is
// not nil, health, readiness, metrics and the status page on admin (plain
// HTTP; api then answers those 404). Without admin, api serves every
// route. Both are served under the connection caps (Config.MaxConns,
// MaxConnsPerPeer). It blocks until Shutdown (returning http.ErrServerClosed) or a
// listener fails (returning its error; shut the service down then). The
// listeners are closed when it returns. Call it once.
func (s *Service) Serve(api, admin net.Listener) error {
	main := s.srv.Handler()
	if admin != nil {
		main = s.srv.APIHandler()
	}
	if s.cfg.APIMiddleware != nil {
		main = s.cfg.APIMiddleware(main)
	}
	served := make(chan error, 2)
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		api.Close()
		if admin != nil {
			admin.Close()
		}
		return http.ErrServerClosed
	}
	s.servers = append(s.servers, s.serve(s.limits.listen(api, "api", s.TLS()), "api", main, s.perim, served))
	if admin != nil {
		s.servers = append(s.servers, s.serve(s.limits.listen(admin, "admin", false), "admin", s.srv.AdminHandler(), nil, served))
	}
	s.mu.Unlock()
	select {
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) {
			<-s.served
		}
		return err
	case <-s.served:
		return http.ErrServerClosed
	}
}

// A listened is one listener being served.
type listened struct {
	hs    *http.Server
	conns *conns
}

// maxHeaderBytes bounds a request's header (net/http allows 4 KiB more):
// callers send a few hundred bytes; a long client certificate travels in
// the TLS handshake, not here.
const maxHeaderBytes = 32 << 10

// serve serves h on ln, the listener called name, in the background,
// behind p's mutual TLS when it has one (nil: plain HTTP); Serve's return
// goes to served.
func (s *Service) serve(ln net.Listener, name string, h http.Handler, p *perimeter.Perimeter, served chan<- error) *listened {
	open := newConns()
	hs := &http.Server{
		ConnState: func(c net.Conn, st http.ConnState) {
			open.track(c, st)
			s.limits.track(c, st)
		},
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       120 * time.Second,
		// net/http's default is 1 MiB; a caller sends a few hundred
		// bytes, and 500 unfinished 900 KB headers held 1.15 GB.
		MaxHeaderBytes: maxHeaderBytes,
		ErrorLog:       newHTTPErrorLog(s.log, name),
	}
	run := func() error { return hs.Serve(ln) }
	if p != nil {
		hs.ConnContext = p.ConnContext // the caller's identity, once per connection
		if hs.TLSConfig = p.TLSConfig(); hs.TLSConfig != nil {
			// The certificate comes from the perimeter's
			// GetConfigForClient, so ServeTLS takes no files of its own.
			run = func() error { return hs.ServeTLS(ln, "", "") }
		}
	}
	go func() { served <- run() }()
	return &listened{hs: hs, conns: open}
}

// Shutdown drains and releases: health and readiness answer 503
// shutting_down, the listeners stop accepting and the requests in flight
// finish (within ctx: connections that sent no request are closed at its
// end), then the generator is closed and the keeper releases its number at
// the generator's last issued mark (lease.Keeper.Close with
// Generator.LastIssued, within ReleaseTimeout of its own), and the store is
// closed. A spare stopped before it claimed releases nothing. It returns
// the drain's error, if any; a second call does nothing.
func (s *Service) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return nil
	}
	s.shutdown = true
	servers := s.servers
	s.mu.Unlock()
	s.srv.SetDraining()
	drainErr := s.stopServing(ctx, servers)
	close(s.served)
	s.stop()
	s.watchers.Wait()
	s.names.close()
	if st := s.node.Keeper.Status(); st.Claims == 0 {
		s.log.Info("stopped before a machine number was claimed: nothing to release", "last_error", st.LastError)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	errs := []error{s.node.Close(cctx)}
	if s.opened != nil {
		errs = append(errs, closeOpened(s.opened))
	}
	if err := errors.Join(errs...); err != nil {
		s.log.Warn("shutdown", "error", err)
	}
	s.perim.Close()
	return drainErr
}

// stopServing stops every listener gracefully at once, within ctx, and
// returns the first failure.
func (s *Service) stopServing(ctx context.Context, servers []*listened) error {
	errs := make(chan error, len(servers))
	for _, l := range servers {
		go func() {
			unused, err := shutdown(ctx, l.hs, l.conns)
			if unused > 0 {
				s.log.Info("closed connections that had sent no request", "count", unused)
			}
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			errs <- err
		}()
	}
	var first error
	for range servers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// fleetOf is the status page's read of every record of st (Admin.List),
// nil — the page says the fleet is not available — for a store with no
// operator's actions. Every store node opens has them; the page only
// shows what they say, and decides nothing.
func fleetOf(st lease.Store) func(context.Context) ([]lease.Record, error) {
	if a, ok := st.(lease.Admin); ok {
		return a.List
	}
	return nil
}
