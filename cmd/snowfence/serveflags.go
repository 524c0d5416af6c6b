package main

import (
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
	idservice "github.com/snowfence/snowfence/service"
)

// serveFlags are serve's options; every one can also be set with its
// SNOWFENCE_* environment variable.
type serveFlags struct {
	store           storeFlags
	listen          string
	adminListen     string
	perimeter       perimeterFlags
	publicIDs       publicIDFlags
	embeddedURL     string
	embeddedPeerURL string
	highWaterFile   string
	highWaterAt     string
	machines        string
	schedule        string
	clockPolicy     string
	maxClockError   time.Duration
	clockJumpSettle time.Duration
	holder          string
	leaseTTL        time.Duration
	lead            time.Duration
	renewEvery      time.Duration
	selfFence       time.Duration
	fenceMargin     time.Duration
	maxBackwardWait time.Duration
	shutdownTimeout time.Duration
	maxConns        int
	maxConnsPerPeer int
	logFormat       string
	logLevel        string
	cpuProfile      string
	testClockOffset bool
}

// register defines serve's flags on fs.
func (f *serveFlags) register(fs *flag.FlagSet) {
	f.store.register(fs)
	def := storeKinds()[0].timings // the default store's
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "HTTP listen address (port 0 picks a free port)")
	fs.StringVar(&f.adminListen, "admin-listen", "", "listen address of a plain-HTTP admin listener for /healthz, /readyz, /livez, /metrics and the status page, which --listen then answers 404 (port 0 picks a free port); empty: everything on --listen")
	f.perimeter.register(fs)
	f.publicIDs.register(fs)
	fs.StringVar(&f.embeddedURL, "embedded-etcd-url", embedetcd.DefaultClientURL, "client URL of the embedded etcd (loopback; port 0 picks one)")
	fs.StringVar(&f.embeddedPeerURL, "embedded-etcd-peer-url", "", "peer URL of the embedded etcd (loopback; port 0 picks one); empty: the client port plus one, or a free port when the client port is 0")
	fs.StringVar(&f.highWaterFile, "high-water-file", "", "where the embedded etcd's holder keeps its high-water mark, which a restore of the data directory cannot take back; keep it out of the directory's backups (empty: beside it, --data-dir"+embedetcd.HighWaterSuffix+")")
	fs.StringVar(&f.highWaterAt, "high-water-at", "", "raise the high-water mark to this instant before starting (now, now+DURATION or RFC 3339), writing the file anew if it is missing or corrupt: for a data directory restored or copied without its file; give a time at or after the last ID issued from the directory")
	fs.StringVar(&f.machines, "machines", "", `machine-number range of this holder class: lo-hi for every layout, layout=lo-hi for one (e.g. "600-699,v2=0-99" across a cutover); empty: each layout's whole range (v1 0-1023, v2 0-511)`)
	fs.StringVar(&f.schedule, "schedule", "v1", `layout schedule, e.g. "v1,v2@2028-01-01T00:00:00Z"; must equal the fleet's (snowfence schedule show); each layout must hold its --machines range, and --region while it is in force`)
	fs.DurationVar(&f.lead, "lead", 0, "how long before a cutover of --schedule the holder claims its number for the next layout, beside its current one (0: max(10m, 20 x --lease-ttl))")
	fs.StringVar(&f.clockPolicy, "clock-policy", "", "what an untrustworthy clock (unsynchronised, more than --max-clock-error off, or jumped forward) does: require (refuse, and fail /healthz), warn or off; "+
		"empty: require with a shared store (--etcd-endpoints, postgres, dynamodb, zookeeper, kubernetes), warn with the embedded etcd (one host), said in the log at start")
	fs.DurationVar(&f.maxClockError, "max-clock-error", 5*time.Millisecond, "the kernel's maximum clock error that clock policy require tolerates (warn warns above it)")
	fs.DurationVar(&f.clockJumpSettle, "clock-jump-settle", snowfence.DefaultClockJumpSettle, "after a forward jump of the wall clock, how long clock policy require waits before the kernel's word that the clock is synchronised again ends the refusal (an undone jump ends it at once)")
	fs.StringVar(&f.holder, "holder", "", "holder identity, unique per process: never give two processes the same (default host/pid-N/process-start-ms/k1)")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", def.LeaseFor, "lease lifetime without renewal"+timingsHelp(func(t lease.Timings) time.Duration { return t.LeaseFor }))
	fs.DurationVar(&f.renewEvery, "renew-every", def.RenewEvery, "renewal period"+timingsHelp(func(t lease.Timings) time.Duration { return t.RenewEvery }))
	fs.DurationVar(&f.selfFence, "self-fence", def.SelfFence, "stop issuing this long after the last acknowledged renewal"+timingsHelp(func(t lease.Timings) time.Duration { return t.SelfFence }))
	fs.DurationVar(&f.fenceMargin, "fence-margin", def.Margin, "stop issuing this long before the reserved mark"+timingsHelp(func(t lease.Timings) time.Duration { return t.Margin }))
	fs.DurationVar(&f.maxBackwardWait, "max-backward-wait", 5*time.Millisecond, "largest clock step back waited out")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight requests get at shutdown")
	fs.IntVar(&f.maxConns, "max-conns", 0, "cap on each listener's open connections; over it the longest idle keep-alive connection is closed, or the new one refused (503 too-many-connections on plain HTTP, closed on TLS). "+
		"The listeners together stay within the open-files limit (ulimit -n) minus a reserve for the lease store, max(256, 10%); 0: that budget")
	fs.IntVar(&f.maxConnsPerPeer, "max-conns-per-peer", 0, fmt.Sprintf("cap on each listener's open connections from one IP address, as --max-conns (callers behind one load balancer share its address); 0: %d, or --max-conns if lower", idservice.DefaultMaxConnsPerPeer))
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the whole run to this file, for performance work")
	fs.BoolVar(&f.testClockOffset, "test-clock-offset", false, "TEST ONLY: serve GET/POST "+testClockPath+`, which steps this process's wall clock ({"step_ms":N} or {"offset_ms":N}), for fault-injection tests; never enable in production`)
}

// timingsHelp names the stores whose timing differs from the flag's default
// (the default store's, etcd), e.g. " (unless set: postgres 5m0s, dynamodb 5m0s)".
func timingsHelp(timing func(lease.Timings) time.Duration) string {
	kinds := storeKinds()
	var other []string
	for _, k := range kinds[1:] {
		if v := timing(k.timings); v != timing(kinds[0].timings) {
			other = append(other, fmt.Sprintf("%s %s", k.name, v))
		}
	}
	if len(other) == 0 {
		return ""
	}
	return " (unless set: " + strings.Join(other, ", ") + ")"
}

// storeTimings gives the timing flags that were not set the store's
// timings.
func (f *serveFlags) storeTimings(fs *flag.FlagSet, t lease.Timings) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, d := range []struct {
		flag string
		v    *time.Duration
		to   time.Duration
	}{
		{"lease-ttl", &f.leaseTTL, t.LeaseFor},
		{"renew-every", &f.renewEvery, t.RenewEvery},
		{"self-fence", &f.selfFence, t.SelfFence},
		{"fence-margin", &f.fenceMargin, t.Margin},
	} {
		if !set[d.flag] {
			*d.v = d.to
		}
	}
}

// nodeConfig turns the flags into a node configuration.
func (f *serveFlags) nodeConfig(log *slog.Logger) (node.Config, error) {
	var cfg node.Config
	cc, err := f.store.clientConfig()
	if err != nil {
		return cfg, err
	}
	rng, layoutRanges, err := lease.ParseRanges(f.machines)
	if err != nil {
		return cfg, usageError{err}
	}
	sched, err := snowfence.ParseSchedule(f.schedule)
	if err != nil {
		return cfg, usageError{err}
	}
	var policy snowfence.ClockPolicy // empty: the node's default for the store
	if f.clockPolicy != "" {
		if policy, err = snowfence.ParseClockPolicy(f.clockPolicy); err != nil {
			return cfg, usageError{err}
		}
	}
	if f.maxClockError <= 0 || f.clockJumpSettle <= 0 {
		return cfg, usagef("--max-clock-error and --clock-jump-settle must be positive")
	}
	if len(cc.Endpoints) > 0 && (f.embeddedURL != embedetcd.DefaultClientURL || f.embeddedPeerURL != "") {
		return cfg, usagef("--embedded-etcd-url and --embedded-etcd-peer-url have no effect with --etcd-endpoints; pass one or the other")
	}
	var highWaterAt time.Time
	if f.highWaterFile != "" || f.highWaterAt != "" {
		if len(cc.Endpoints) > 0 || f.store.storeKind().name != "etcd" {
			return cfg, usagef("--high-water-file and --high-water-at are the embedded etcd's; they have no effect with another store")
		}
		if f.highWaterAt != "" {
			ms, err := parseInstant("high-water-at", f.highWaterAt, time.Now())
			if err != nil {
				return cfg, err
			}
			highWaterAt = time.UnixMilli(ms)
		}
	}
	for _, fl := range []struct{ name, url string }{{"embedded-etcd-url", f.embeddedURL}, {"embedded-etcd-peer-url", f.embeddedPeerURL}} {
		if u := fl.url; u != "" && !strings.HasPrefix(u, "http://127.") && !strings.HasPrefix(u, "http://localhost:") && !strings.HasPrefix(u, "http://[::1]:") {
			return cfg, usagef("--%s %q must be a loopback http URL: the embedded etcd has no authentication", fl.name, u)
		}
	}
	cfg.Logger = log
	cfg.Open = f.store.storeKind().open(&f.store, cc, embedetcd.Config{Dir: f.store.dataDir, ClientURL: f.embeddedURL, PeerURL: f.embeddedPeerURL,
		HighWaterFile: f.highWaterFile, HighWaterAt: highWaterAt})
	cfg.TimingsChosen = true // storeTimings took the store's for the flags not given
	// Keeper.Region is left 0, and the store configuration's region too (the
	// Opener gives it the keeper's): serve resolves --region from the
	// store's region registry before it starts the node.
	cfg.Keeper = lease.KeeperConfig{
		Holder:       f.holder,
		Range:        rng,
		LayoutRanges: layoutRanges,
		Lead:         f.lead,
		LeaseFor:     f.leaseTTL,
		RenewEvery:   f.renewEvery,
		SelfFence:    f.selfFence,
		Margin:       f.fenceMargin,
		Schedule:     sched,
	}
	cfg.Generator = snowfence.Config{Schedule: sched, ClockPolicy: policy, MaxClockError: f.maxClockError, ClockJumpSettle: f.clockJumpSettle,
		MaxBackwardWait: f.maxBackwardWait}
	return cfg, nil
}
