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
	"strings"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/internal/offsetclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
	"github.com/snowfence/snowfence/server"
)

// serveFlags are serve's options; every one can also be set with its
// SNOWFENCE_* environment variable.
type serveFlags struct {
	store           storeFlags
	listen          string
	embeddedURL     string
	machines        string
	schedule        string
	clockPolicy     string
	holder          string
	leaseTTL        time.Duration
	renewEvery      time.Duration
	selfFence       time.Duration
	fenceMargin     time.Duration
	maxBackwardWait time.Duration
	shutdownTimeout time.Duration
	logFormat       string
	logLevel        string
	cpuProfile      string
	testClockOffset bool
}

// runServe runs the ID service until ctx ends (SIGTERM or SIGINT): then it
// stops accepting, finishes the requests in flight, and releases the lease.
func runServe(ctx context.Context, e env, args []string) error {
	var f serveFlags
	fs := newFlags(e, "serve")
	f.store.register(fs)
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "HTTP listen address (port 0 picks a free port)")
	fs.StringVar(&f.embeddedURL, "embedded-etcd-url", embedetcd.DefaultClientURL, "client URL of the embedded etcd (loopback; port 0 picks one)")
	fs.StringVar(&f.machines, "machines", "0-1023", "machine-number range of this holder class, lo-hi")
	fs.StringVar(&f.schedule, "schedule", "v1", `layout schedule, e.g. "v1,v2@2028-01-01T00:00:00Z"; must equal the fleet's (snowfence schedule show), and every layout in force from now on must hold --machines and --region`)
	fs.StringVar(&f.clockPolicy, "clock-policy", string(snowfence.ClockWarn), "what an unsynchronised clock does: require, warn or off")
	fs.StringVar(&f.holder, "holder", "", "holder identity, unique per process: never give two processes the same (default host/pid-N/process-start-ms/k1)")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 10*time.Second, "lease lifetime without renewal (lease tables: 5m unless set)")
	fs.DurationVar(&f.renewEvery, "renew-every", 2*time.Second, "renewal period (lease tables: 10s unless set)")
	fs.DurationVar(&f.selfFence, "self-fence", 5*time.Second, "stop issuing this long after the last acknowledged renewal (lease tables: 30s unless set)")
	fs.DurationVar(&f.fenceMargin, "fence-margin", 0, "stop issuing this long before the reserved mark (lease tables: 5s unless set)")
	fs.DurationVar(&f.maxBackwardWait, "max-backward-wait", 5*time.Millisecond, "largest clock step back waited out")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight requests get at shutdown")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the whole run to this file, for performance work")
	fs.BoolVar(&f.testClockOffset, "test-clock-offset", false, "TEST ONLY: serve GET/POST "+testClockPath+`, which steps this process's wall clock ({"step_ms":N} or {"offset_ms":N}), for fault-injection tests; never enable in production`)
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("takes no arguments, got %q", pos)
	}
	if err := applyEnv(fs, e.getenv); err != nil {
		return err
	}
	if err := f.store.check(); err != nil {
		return err
	}
	if f.store.isTable() {
		f.tableTimings(fs)
	}
	log, err := newLogger(e, f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	cfg, err := f.nodeConfig(log)
	if err != nil {
		return err
	}
	var testClock *offsetclock.Clock
	if f.testClockOffset {
		testClock = useTestClock(&cfg)
		log.Warn("TEST ONLY: the test clock offset endpoint is enabled; any client can step this process's wall clock", "path", testClockPath)
	}
	log.Info("starting snowfence serve", "options", describeFlags(fs))
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}

	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", f.listen, err)
	}
	defer ln.Close()
	started := time.Now()
	if f.store.isTable() {
		if cfg.Store, _, err = f.store.tableStore(ctx, log); err != nil {
			return fmt.Errorf("lease store %s: %w", f.store.kind, err)
		}
		defer cfg.Store.Close()
	}
	n, err := node.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	closeNode := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := n.Close(cctx); err != nil {
			log.Warn("shutdown", "error", err)
		}
	}
	if n.Embedded != nil {
		fmt.Fprintf(e.stdout, "embedded etcd on %s (data in %s)\n", n.Embedded.Endpoints()[0], f.store.dataDir)
		fmt.Fprintf(e.stderr, "WARNING: %s\n", node.EmbeddedWarning)
	}
	st := n.Keeper.Status()
	fmt.Fprintf(e.stdout, "machine %d (region %d, token %d), ready in %s\n", st.Machine, st.Region, st.Token, time.Since(started).Round(time.Millisecond))

	srv, err := server.New(server.Config{Generator: n.Generator, Schedule: cfg.Generator.Schedule, Lease: n.Keeper, Logger: log})
	if err != nil {
		closeNode()
		return err
	}
	handler := srv.Handler()
	if testClock != nil {
		handler = withTestClock(handler, testClock)
	}
	open := newConns()
	hs := &http.Server{
		ConnState:         open.track,
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(e.stdout, "listening on http://%s\n", ln.Addr())

	select {
	case err = <-served:
		closeNode()
		return fmt.Errorf("http server: %w", err)
	case err = <-embeddedErr(n):
		log.Error("embedded etcd failed", "error", err)
	case <-ctx.Done():
		log.Info("shutting down: finishing requests in flight, then releasing the lease")
	}
	srv.SetDraining()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.shutdownTimeout)
	defer cancel()
	unused, shutErr := shutdown(sctx, hs, open)
	if unused > 0 {
		log.Info("closed connections that had sent no request", "count", unused)
	}
	closeNode()
	if shutErr != nil && !errors.Is(shutErr, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", shutErr)
	}
	log.Info("stopped")
	return err
}

// startCPUProfile profiles the process until the returned function is called.
func startCPUProfile(path string) (func(), error) {
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

// nodeConfig turns the flags into a node configuration.
func (f *serveFlags) nodeConfig(log *slog.Logger) (node.Config, error) {
	var cfg node.Config
	cc, err := f.store.clientConfig()
	if err != nil {
		return cfg, err
	}
	rng, err := lease.ParseRange(f.machines)
	if err != nil {
		return cfg, usageError{err}
	}
	sched, err := snowfence.ParseSchedule(f.schedule)
	if err != nil {
		return cfg, usageError{err}
	}
	policy, err := snowfence.ParseClockPolicy(f.clockPolicy)
	if err != nil {
		return cfg, usageError{err}
	}
	if len(cc.Endpoints) > 0 && f.embeddedURL != embedetcd.DefaultClientURL {
		return cfg, usagef("--embedded-etcd-url has no effect with --etcd-endpoints; pass one or the other")
	}
	if u := f.embeddedURL; !strings.HasPrefix(u, "http://127.") && !strings.HasPrefix(u, "http://localhost:") && !strings.HasPrefix(u, "http://[::1]:") {
		return cfg, usagef("--embedded-etcd-url %q must be a loopback http URL: the embedded etcd has no authentication", u)
	}
	cfg.Logger = log
	cfg.Etcd = cc
	cfg.Embedded = embedetcd.Config{Dir: f.store.dataDir, ClientURL: f.embeddedURL}
	cfg.EtcdStore = f.store.storeConfig()
	cfg.Keeper = lease.KeeperConfig{
		Holder:     f.holder,
		Range:      &rng,
		Region:     f.store.region,
		LeaseFor:   f.leaseTTL,
		RenewEvery: f.renewEvery,
		SelfFence:  f.selfFence,
		Margin:     f.fenceMargin,
		Schedule:   sched,
	}
	cfg.Generator = snowfence.Config{Schedule: sched, ClockPolicy: policy, MaxBackwardWait: f.maxBackwardWait}
	return cfg, nil
}

// tableTimings applies seed 002's lease-table timings to the timing flags
// that were not set: a 5-minute lease renewed every 10 s, issuing stopping
// 5 s before the stored expiry, and a 30 s self-fence.
func (f *serveFlags) tableTimings(fs *flag.FlagSet) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, d := range []struct {
		flag string
		v    *time.Duration
		to   time.Duration
	}{
		{"lease-ttl", &f.leaseTTL, 5 * time.Minute},
		{"renew-every", &f.renewEvery, 10 * time.Second},
		{"self-fence", &f.selfFence, 30 * time.Second},
		{"fence-margin", &f.fenceMargin, 5 * time.Second},
	} {
		if !set[d.flag] {
			*d.v = d.to
		}
	}
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

// testClockPath is where --test-clock-offset serves the clock offset.
const testClockPath = "/test/clock-offset"

// useTestClock makes cfg's keeper and generator share a system clock whose
// wall reading carries a settable offset (node.Start shares the generator's
// clock with the keeper), keeping the keeper's CLOCK_BOOTTIME watchdog that
// node.Start only adds to a system clock it makes itself.
func useTestClock(cfg *node.Config) *offsetclock.Clock {
	oc := offsetclock.New(snowfence.SystemClock())
	cfg.Generator.Clock = oc
	cfg.Keeper.Boottime = lease.Boottime
	return oc
}

// withTestClock routes testClockPath to the offset's handler and every other
// path to next: the ID server knows nothing of it.
func withTestClock(next http.Handler, oc *offsetclock.Clock) http.Handler {
	clock := oc.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == testClockPath {
			clock.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
