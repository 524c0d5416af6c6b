package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/offsetclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/perimeter"
	"github.com/snowfence/snowfence/server"
)

// runServe runs the ID service until ctx ends (SIGTERM or SIGINT): then it
// stops accepting, finishes the requests in flight, and releases the lease.
// It listens before it claims a machine number, answering 503 "starting"
// meanwhile, and while every number in the range is held it waits for one
// to free rather than exit.
func runServe(ctx context.Context, e env, args []string) error {
	f, fs, err := parseServeFlags(e, args)
	if err != nil {
		return err
	}
	cfg, err := f.config(e, fs)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(cfg.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	s, err := listen(cfg)
	if err != nil {
		return err
	}
	return s.run(ctx, e, cfg)
}

// parseServeFlags reads serve's flags and their environment variables, and
// gives the timing flags left unset the timings of the store chosen.
func parseServeFlags(e env, args []string) (*serveFlags, *flag.FlagSet, error) {
	f := new(serveFlags)
	fs := newFlags(e, "serve")
	f.register(fs)
	pos, err := parse(e, fs, args)
	if err != nil {
		return nil, nil, err
	}
	if len(pos) != 0 {
		return nil, nil, usagef("takes no arguments, got %q", pos)
	}
	if err := applyEnv(fs, e.getenv); err != nil {
		return nil, nil, err
	}
	if err := f.store.check(); err != nil {
		return nil, nil, err
	}
	f.storeTimings(fs, f.store.storeKind().timings)
	return f, fs, nil
}

// serveConfig is what serve starts: the node and the service around it.
type serveConfig struct {
	node            node.Config
	log             *slog.Logger
	listen          string
	adminListen     string // "": health and metrics on listen
	perimeter       perimeterFlags
	publicIDs       publicIDs // the keyset of public IDs, read at start
	shutdownTimeout time.Duration
	cpuProfile      string             // "": none
	dataDir         string             // of the embedded etcd, for the start-up line
	region          string             // --region: a name or a number
	etcdStore       etcdstore.Config   // the etcd store's, should the node run the embedded etcd
	testClock       *offsetclock.Clock // nil unless --test-clock-offset
}

// config turns the flags into what serve starts, and logs the options.
func (f *serveFlags) config(e env, fs *flag.FlagSet) (serveConfig, error) {
	log, err := newLogger(e, f.logFormat, f.logLevel)
	if err != nil {
		return serveConfig{}, err
	}
	if err := f.perimeter.check(); err != nil {
		return serveConfig{}, err
	}
	cfg := serveConfig{log: log, listen: f.listen, adminListen: f.adminListen, perimeter: f.perimeter, shutdownTimeout: f.shutdownTimeout, cpuProfile: f.cpuProfile, dataDir: f.store.dataDir,
		region: f.store.regionText, etcdStore: f.store.storeConfig()}
	if cfg.node, err = f.nodeConfig(log); err != nil {
		return serveConfig{}, err
	}
	if cfg.publicIDs, err = f.publicIDs.load(&f.perimeter, log); err != nil {
		return serveConfig{}, err
	}
	if f.testClockOffset {
		cfg.testClock = useTestClock(&cfg.node)
		log.Warn("TEST ONLY: the test clock offset endpoint is enabled; any client can step this process's wall clock", "path", testClockPath)
	}
	log.Info("starting snowfence serve", "options", describeFlags(fs))
	return cfg, nil
}

// An idService is a running serve: its listeners, serving a Starting until
// the node holds a machine number, then the HTTP service minting on it.
type idService struct {
	ln      net.Listener // the main listener: the API
	adminLn net.Listener // --admin-listen: health and metrics; nil without it
	// main and admin are what the listeners serve: a Starting's handlers,
	// then the Server's. Without an admin listener, main serves every route.
	main, admin     swapHandler
	reg             *prometheus.Registry // /metrics, from the start on
	perimeter       *perimeter.Perimeter // mutual TLS and quotas of the main listener
	starting        *server.Starting
	opened          *node.Opened // the lease store, opened once for every claim
	node            *node.Node   // nil until a number is claimed
	names           *regionNames // decode's region names, from the holder's own store
	srv             *server.Server
	log             *slog.Logger
	shutdownTimeout time.Duration
}

// listen opens the main listener and, with --admin-listen, the admin one.
func listen(cfg serveConfig) (*idService, error) {
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.listen, err)
	}
	s := &idService{ln: ln, log: cfg.log, shutdownTimeout: cfg.shutdownTimeout}
	if cfg.adminListen != "" {
		if s.adminLn, err = net.Listen("tcp", cfg.adminListen); err != nil {
			ln.Close()
			return nil, fmt.Errorf("--admin-listen %s: %w", cfg.adminListen, err)
		}
	}
	return s, nil
}

// closeListeners closes the listeners, for an exit before they are served.
func (s *idService) closeListeners() {
	s.ln.Close()
	if s.adminLn != nil {
		s.adminLn.Close()
	}
}

// run reads the region, opens the store, serves a Starting while it claims
// a machine number (waiting while every number is held), then serves the ID
// service until ctx ends or the embedded etcd fails; then it finishes the
// requests in flight (within --shutdown-timeout) and releases the number.
// It says on stdout where it runs. ctx ending before a number is claimed
// is a clean stop: nothing is held, nothing is released.
func (s *idService) run(ctx context.Context, e env, cfg serveConfig) (err error) {
	started := time.Now()
	hr, err := s.openStore(ctx, e, cfg)
	if err != nil {
		s.closeListeners()
		return err
	}
	defer func() {
		if s.node == nil {
			closeOpened(s.opened)
		}
	}()
	s.reg = prometheus.NewRegistry()
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The perimeter's files are read before any number is claimed: a bad
	// certificate or callers file stops serve at once.
	if s.perimeter, err = perimeter.New(cfg.perimeter.config(s.reg, cfg.log)); err != nil {
		s.closeListeners()
		return fmt.Errorf("start: %w", err)
	}
	defer s.perimeter.Close()
	// The status page (on the admin listener when there is one) shows the
	// fleet from the holder's own store, while waiting for a number too.
	s.starting = server.NewStarting(server.StartingConfig{Gatherer: s.reg, Region: hr.region.Number, Logger: cfg.log,
		Fleet: fleetOf(s.opened.Store), RegionNames: hr.registry.NameOf, Schedule: cfg.node.Generator.Schedule})
	if s.adminLn != nil {
		s.main.set(s.starting.APIHandler())
		s.admin.set(s.starting.AdminHandler())
	} else {
		s.main.set(s.starting.Handler())
	}
	var mainHandler http.Handler = &s.main
	if cfg.testClock != nil {
		mainHandler = withTestClock(mainHandler, cfg.testClock)
	}
	served := make(chan error, 2)
	servers := []*listened{s.serve(s.ln, mainHandler, s.perimeter, served)}
	if s.adminLn != nil {
		servers = append(servers, s.serve(s.adminLn, &s.admin, nil, served))
	}
	scheme := "http"
	if s.perimeter.TLSConfig() != nil {
		scheme = "https"
	}

	printed := false
	printListening := func(note string) {
		if printed {
			return
		}
		printed = true
		if s.adminLn != nil {
			fmt.Fprintf(e.stdout, "admin on http://%s (/healthz, /readyz, /metrics, the status page at /)\n", s.adminLn.Addr())
		}
		fmt.Fprintf(e.stdout, "listening on %s://%s%s\n", scheme, s.ln.Addr(), note)
	}
	nc := cfg.node
	nc.Open, nc.Store, nc.Keeper.Region = nil, s.opened.Store, hr.region.Number
	if nc.Keeper.HighWater == nil {
		nc.Keeper.HighWater = s.opened.HighWater // the embedded etcd's file beside its data directory
	}
	// After the first claim that finds every number held, the keeper's
	// and generator's lines go to Debug until a claim succeeds: the waiter
	// reports the wait at its own pace.
	var quiet atomic.Bool
	if nc.Logger != nil {
		nc.Logger = quietWhile(nc.Logger, &quiet)
	}
	// A spare claims at least as often as a holder renews (at most every
	// claimRetryMax): a number freed by a release or an expired lease is
	// taken within one renewal period, as a holder of the fleet would
	// notice its own loss.
	w := &claimWaiter{clock: snowfence.SystemClock(), log: cfg.log, max: min(claimRetryMax, max(claimRetryMin, nc.Keeper.RenewEvery)), waiting: func(attempt int, err error) {
		quiet.Store(true)
		s.starting.SetReason(server.ReasonNoFreeNumber, err.Error())
		printListening(" (waiting for a free machine number; 503 until then)")
	}}
	n, err := w.wait(ctx, func(ctx context.Context) (*node.Node, error) { return node.Start(ctx, nc) })
	quiet.Store(false)
	if err != nil {
		s.starting.SetDraining()
		s.stopServing(ctx, servers)
		if ctx.Err() != nil {
			s.log.Info("stopped before a machine number was claimed: nothing to release", "last_error", err)
			return nil
		}
		return fmt.Errorf("start: %w", err)
	}
	s.node = n
	if err := s.startServer(cfg, hr); err != nil {
		s.starting.SetDraining()
		s.stopServing(ctx, servers)
		s.closeNode(ctx)
		return err
	}
	st := n.Keeper.Status()
	region := fmt.Sprint(st.Region)
	if hr.region.Name != "" {
		region = fmt.Sprintf("%s, number %d", hr.region.Name, st.Region)
	}
	fmt.Fprintf(e.stdout, "machine %d (region %s, token %d), ready in %s\n", st.Machine, region, st.Token, time.Since(started).Round(time.Millisecond))
	printListening("")

	select {
	case err = <-served:
		err = fmt.Errorf("http server: %w", err)
		s.srv.SetDraining()
		s.stopServing(ctx, servers)
		s.closeNode(ctx)
		return err
	case err = <-embeddedErr(s.opened):
		s.log.Error("embedded etcd failed", "error", err)
	case <-ctx.Done():
		s.log.Info("shutting down: finishing requests in flight, then releasing the lease")
	}
	s.srv.SetDraining()
	shutErr := s.stopServing(ctx, servers)
	s.closeNode(ctx)
	if shutErr != nil {
		return fmt.Errorf("shutdown: %w", shutErr)
	}
	s.log.Info("stopped")
	return err
}

// openStore resolves --region from the holder's own store and opens the
// store the node claims from, once for every claim attempt.
func (s *idService) openStore(ctx context.Context, e env, cfg serveConfig) (holderRegion, error) {
	open := cfg.node.Open
	if open == nil {
		open = node.EmbeddedEtcd(embedetcd.Config{}, cfg.etcdStore)
	}
	hr, err := resolveHolderRegion(ctx, open, cfg.etcdStore, cfg.region, cfg.log)
	if err != nil {
		return hr, fmt.Errorf("start: %w", err)
	}
	defer hr.release()
	if s.opened, err = hr.open(ctx, hr.region.Number, cfg.log); err != nil {
		return hr, fmt.Errorf("start: %w", err)
	}
	if o := s.opened; o.Embedded != nil {
		fmt.Fprintf(e.stdout, "embedded etcd on %s (data in %s)\n", o.Embedded.Endpoints()[0], cfg.dataDir)
		fmt.Fprintf(e.stderr, "WARNING: %s\n", node.EmbeddedWarning)
	}
	return hr, nil
}

// startServer builds the ID service on the node and swaps it in for the
// Starting.
func (s *idService) startServer(cfg serveConfig, hr holderRegion) (err error) {
	n := s.node
	// The server's clock is the generator's (a test clock under
	// --test-clock-offset): decode's future check and the UUIDv7s of
	// POST /v1/uuids read the same time as the IDs.
	sc := server.Config{Generator: n.Generator, Schedule: cfg.node.Generator.Schedule, Lease: n.Keeper, Logger: cfg.log, Registerer: s.reg,
		Quota: s.perimeter.Quota(), Clock: cfg.node.Generator.Clock, Fleet: fleetOf(s.opened.Store)}
	cfg.publicIDs.configure(&sc, s.perimeter)
	s.names = newRegionNames(registryReader(n.Store), hr.registry, cfg.log, time.Now)
	s.names.start()
	sc.RegionNames = s.names.Name
	// Region numbers left, for the alert on a registry nearly used up:
	// only once a layout with region bits is in the schedule and a
	// registry was written.
	steps := cfg.node.Generator.Schedule.Steps()
	if last := steps[len(steps)-1].Layout; last.RegionBits > 0 {
		total := 1 << last.RegionBits
		sc.RegionNumbers = func() (int, int) {
			reg := s.names.reg.Load()
			if reg == nil || reg.Version == 0 {
				return 0, 0 // no registry written: export nothing
			}
			return reg.Left(total), total
		}
	}
	if s.srv, err = server.New(sc); err != nil {
		return err
	}
	if s.adminLn != nil {
		s.main.set(s.srv.APIHandler())
		s.admin.set(s.srv.AdminHandler())
	} else {
		s.main.set(s.srv.Handler())
	}
	return nil
}

// A listened is one listener being served.
type listened struct {
	hs    *http.Server
	conns *conns
}

// serve serves h on ln in the background, behind p's mutual TLS when it
// has one (nil: plain HTTP); Serve's return goes to served.
func (s *idService) serve(ln net.Listener, h http.Handler, p *perimeter.Perimeter, served chan<- error) *listened {
	open := newConns()
	hs := &http.Server{
		ConnState:         open.track,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
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

// stopServing stops every listener gracefully at once, within
// --shutdown-timeout, and returns the first failure.
func (s *idService) stopServing(ctx context.Context, servers []*listened) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdownTimeout)
	defer cancel()
	errs := make(chan error, len(servers))
	for _, l := range servers {
		go func() {
			unused, err := shutdown(sctx, l.hs, l.conns)
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

// closeNode releases the machine number and closes the store, within 5 s.
func (s *idService) closeNode(ctx context.Context) {
	if s.names != nil {
		s.names.close()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := errors.Join(s.node.Close(cctx), closeOpened(s.opened)); err != nil {
		s.log.Warn("shutdown", "error", err)
	}
}

// swapHandler serves the handler set last: a Starting's until the node
// holds a number, then the Server's. The swap is one atomic store, so no
// request is served by neither.
type swapHandler struct{ h atomic.Pointer[http.Handler] }

func (sw *swapHandler) set(h http.Handler) { sw.h.Store(&h) }

func (sw *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*sw.h.Load()).ServeHTTP(w, r)
}

// startCPUProfile profiles the process, if path names a file, until the
// returned function is called.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	out, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		out.Close()
	}, nil
}

// embeddedErr delivers the embedded etcd's failure, if there is one.
func embeddedErr(o *node.Opened) <-chan error {
	if o == nil || o.Embedded == nil {
		return nil
	}
	return o.Embedded.Err()
}

// newLogger builds the structured logger: diagnostics go to stderr.
func newLogger(e env, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(e.stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(e.stderr, opts)), nil
	}
	return nil, usagef("--log-format %q: use text or json", format)
}

// fleetOf is the status page's read of every record of st (Admin.List),
// nil — the page says the fleet is not available — for a store with no
// operator's actions. Every store serve opens has them; the page only
// shows what they say, and decides nothing.
func fleetOf(st lease.Store) func(context.Context) ([]lease.Record, error) {
	if a, ok := st.(lease.Admin); ok {
		return a.List
	}
	return nil
}

// registryReader is st's registry.Reader (Store.RegistryReader), or nil
// for a store that keeps no registry.
func registryReader(st lease.Store) registry.Reader {
	if rr := st.RegistryReader(); rr != nil {
		return rr
	}
	return nil
}
