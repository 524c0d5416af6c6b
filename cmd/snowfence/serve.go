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
	"time"

	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/offsetclock"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/server"
)

// runServe runs the ID service until ctx ends (SIGTERM or SIGINT): then it
// stops accepting, finishes the requests in flight, and releases the lease.
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
	svc, err := start(ctx, e, cfg)
	if err != nil {
		return err
	}
	return svc.serveUntilStopped(ctx, e)
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
	cfg := serveConfig{log: log, listen: f.listen, shutdownTimeout: f.shutdownTimeout, cpuProfile: f.cpuProfile, dataDir: f.store.dataDir,
		region: f.store.regionText, etcdStore: f.store.storeConfig()}
	if cfg.node, err = f.nodeConfig(log); err != nil {
		return serveConfig{}, err
	}
	if f.testClockOffset {
		cfg.testClock = useTestClock(&cfg.node)
		log.Warn("TEST ONLY: the test clock offset endpoint is enabled; any client can step this process's wall clock", "path", testClockPath)
	}
	log.Info("starting snowfence serve", "options", describeFlags(fs))
	return cfg, nil
}

// An idService is a started serve: the node holding a machine number and the
// HTTP service minting on it.
type idService struct {
	ln              net.Listener
	node            *node.Node
	names           *regionNames // decode's region names, from the holder's own store
	srv             *server.Server
	handler         http.Handler
	log             *slog.Logger
	shutdownTimeout time.Duration
}

// start listens, opens the store, claims a machine number and builds the
// HTTP service, saying on stdout where it runs.
func start(ctx context.Context, e env, cfg serveConfig) (_ *idService, err error) {
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.listen, err)
	}
	defer func() {
		if err != nil {
			ln.Close()
		}
	}()
	started := time.Now()
	nc := cfg.node
	open := nc.Open
	if open == nil {
		open = node.EmbeddedEtcd(embedetcd.Config{}, cfg.etcdStore)
	}
	hr, err := resolveHolderRegion(ctx, open, cfg.etcdStore, cfg.region, cfg.node.Generator.Schedule.String(), cfg.log)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	defer hr.release()
	nc.Open, nc.Keeper.Region = hr.open, hr.region.Number
	n, err := node.Start(ctx, nc)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	s := &idService{ln: ln, node: n, log: cfg.log, shutdownTimeout: cfg.shutdownTimeout}
	if n.Embedded != nil {
		fmt.Fprintf(e.stdout, "embedded etcd on %s (data in %s)\n", n.Embedded.Endpoints()[0], cfg.dataDir)
		fmt.Fprintf(e.stderr, "WARNING: %s\n", node.EmbeddedWarning)
	}
	st := n.Keeper.Status()
	region := fmt.Sprint(st.Region)
	if hr.region.Name != "" {
		region = fmt.Sprintf("%s, number %d", hr.region.Name, st.Region)
	}
	fmt.Fprintf(e.stdout, "machine %d (region %s, token %d), ready in %s\n", st.Machine, region, st.Token, time.Since(started).Round(time.Millisecond))

	sc := server.Config{Generator: n.Generator, Schedule: cfg.node.Generator.Schedule, Lease: n.Keeper, Logger: cfg.log}
	s.names = newRegionNames(n.Store, hr.registry, cfg.log, time.Now)
	s.names.start()
	sc.RegionNames = s.names.Name
	s.srv, err = server.New(sc)
	if err != nil {
		s.closeNode(ctx)
		return nil, err
	}
	s.handler = s.srv.Handler()
	if cfg.testClock != nil {
		s.handler = withTestClock(s.handler, cfg.testClock)
	}
	return s, nil
}

// serveUntilStopped serves HTTP until ctx ends or the embedded etcd fails,
// then finishes the requests in flight (within --shutdown-timeout) and
// releases the machine number.
func (s *idService) serveUntilStopped(ctx context.Context, e env) error {
	defer s.ln.Close()
	open := newConns()
	hs := &http.Server{
		ConnState:         open.track,
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(s.ln) }()
	fmt.Fprintf(e.stdout, "listening on http://%s\n", s.ln.Addr())

	var err error
	select {
	case err = <-served:
		s.closeNode(ctx)
		return fmt.Errorf("http server: %w", err)
	case err = <-embeddedErr(s.node):
		s.log.Error("embedded etcd failed", "error", err)
	case <-ctx.Done():
		s.log.Info("shutting down: finishing requests in flight, then releasing the lease")
	}
	s.srv.SetDraining()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdownTimeout)
	defer cancel()
	unused, shutErr := shutdown(sctx, hs, open)
	if unused > 0 {
		s.log.Info("closed connections that had sent no request", "count", unused)
	}
	s.closeNode(ctx)
	if shutErr != nil && !errors.Is(shutErr, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", shutErr)
	}
	s.log.Info("stopped")
	return err
}

// closeNode releases the machine number and closes the store, within 5 s.
func (s *idService) closeNode(ctx context.Context) {
	if s.names != nil {
		s.names.close()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.node.Close(cctx); err != nil {
		s.log.Warn("shutdown", "error", err)
	}
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
func embeddedErr(n *node.Node) <-chan error {
	if n.Embedded == nil {
		return nil
	}
	return n.Embedded.Err()
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
