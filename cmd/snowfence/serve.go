package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"time"

	"github.com/snowfence/snowfence/node"
	idservice "github.com/snowfence/snowfence/service"
)

// runServe runs the ID service (package service) until ctx ends (SIGTERM
// or SIGINT): then it stops accepting, finishes the requests in flight, and
// releases the lease. It listens before its keeper holds a machine number,
// answering 503 "starting" meanwhile, and while every number in the range
// is held it waits for one to free rather than exit.
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
	ln, adminLn, err := listen(cfg)
	if err != nil {
		return err
	}
	return runService(ctx, e, cfg, ln, adminLn)
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

// serveConfig is what serve starts: the service, and where it listens.
type serveConfig struct {
	service         idservice.Config
	log             *slog.Logger
	listen          string
	adminListen     string // "": health and metrics on listen
	shutdownTimeout time.Duration
	cpuProfile      string // "": none
	dataDir         string // of the embedded etcd, for the start-up line
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
	cfg := serveConfig{log: log, listen: f.listen, adminListen: f.adminListen, shutdownTimeout: f.shutdownTimeout, cpuProfile: f.cpuProfile, dataDir: f.store.dataDir}
	sc := idservice.Config{Region: f.store.regionText, EmbeddedEtcdStore: f.store.storeConfig(), Perimeter: f.perimeter.config(nil, log), Logger: log,
		MaxConns: f.maxConns, MaxConnsPerPeer: f.maxConnsPerPeer}
	if sc.Node, err = f.nodeConfig(log); err != nil {
		return serveConfig{}, err
	}
	ids, err := f.publicIDs.load(&f.perimeter, log)
	if err != nil {
		return serveConfig{}, err
	}
	ids.configure(&sc)
	if f.testClockOffset {
		oc := useTestClock(&sc.Node)
		sc.APIMiddleware = func(h http.Handler) http.Handler { return withTestClock(h, oc) }
		log.Warn("TEST ONLY: the test clock offset endpoint is enabled; any client can step this process's wall clock", "path", testClockPath)
	}
	cfg.service = sc
	log.Info("starting snowfence serve", "options", describeFlags(fs))
	return cfg, nil
}

// listen opens the main listener and, with --admin-listen, the admin one.
func listen(cfg serveConfig) (ln, adminLn net.Listener, err error) {
	if ln, err = net.Listen("tcp", cfg.listen); err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", cfg.listen, err)
	}
	if cfg.adminListen != "" {
		if adminLn, err = net.Listen("tcp", cfg.adminListen); err != nil {
			ln.Close()
			return nil, nil, fmt.Errorf("--admin-listen %s: %w", cfg.adminListen, err)
		}
	}
	return ln, adminLn, nil
}

// runService starts the service (opening the store, reading the region) and
// serves it until ctx ends, a listener fails, the keeper's first claim is
// refused for good or the embedded etcd fails; then it drains (within
// --shutdown-timeout) and releases the number. It says on stdout where it
// runs once the holder issues, or once it waits as a spare. ctx ending
// before a number is claimed is a clean stop: nothing is held, nothing is
// released.
func runService(ctx context.Context, e env, cfg serveConfig, ln, adminLn net.Listener) error {
	started := time.Now()
	svc, err := idservice.New(ctx, cfg.service)
	if err != nil {
		ln.Close()
		if adminLn != nil {
			adminLn.Close()
		}
		return err
	}
	if emb := svc.Node().Embedded; emb != nil {
		fmt.Fprintf(e.stdout, "embedded etcd on %s (data in %s)\n", emb.Endpoints()[0], cfg.dataDir)
		fmt.Fprintf(e.stderr, "WARNING: %s\n", node.EmbeddedWarning)
	}
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ln, adminLn) }()
	scheme := "http"
	if svc.TLS() {
		scheme = "https"
	}
	printed := false
	printListening := func(note string) {
		if printed {
			return
		}
		printed = true
		if adminLn != nil {
			fmt.Fprintf(e.stdout, "admin on http://%s (/healthz, /readyz, /livez, /metrics, the status page at /)\n", adminLn.Addr())
		}
		fmt.Fprintf(e.stdout, "listening on %s://%s%s\n", scheme, ln.Addr(), note)
	}
	waiting, ready := svc.Waiting(), svc.Ready()
	for {
		select {
		case <-waiting:
			waiting = nil
			printListening(" (waiting for a free machine number; 503 until then)")
			continue
		case <-ready:
			ready = nil
			st := svc.Node().Keeper.Status()
			region := fmt.Sprint(st.Region)
			if name := svc.Region().Name; name != "" {
				region = fmt.Sprintf("%s, number %d", name, st.Region)
			}
			fmt.Fprintf(e.stdout, "machine %d (region %s, token %d), ready in %s\n", st.Machine, region, st.Token, time.Since(started).Round(time.Millisecond))
			printListening("")
			continue
		case err = <-served:
			err = fmt.Errorf("http server: %w", err)
		case <-svc.Done():
			err = svc.Err()
			cfg.log.Error("cannot go on", "error", err)
		case <-ctx.Done():
			cfg.log.Info("shutting down: finishing requests in flight, then releasing the lease")
		}
		break
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdownTimeout)
	defer cancel()
	if shutErr := svc.Shutdown(sctx); shutErr != nil && err == nil {
		return fmt.Errorf("shutdown: %w", shutErr)
	}
	if err == nil {
		cfg.log.Info("stopped")
	}
	return err
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
