package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence/harness/chaos/etcdproc"
	"github.com/snowfence/snowfence/harness/chaos/oracle"
	"github.com/snowfence/snowfence/lease"
)

// Env is one scenario's world: a fresh three-member etcd cluster or a
// fresh lease table on the run's table servers, the services and library
// holders the scenario starts, the callers, and the collector in front of
// a fresh oracle table.
type Env struct {
	ctx   context.Context
	opts  Options
	id    string // scenario id, "5b"
	short bool
	// storeDefaults: the scenario's holders run the store's defaults, the
	// tables' self-fence bound included, even in the short mode
	// (scenarios_outage.go); set before any holder starts.
	storeDefaults bool
	rng           *rand.Rand
	dir           string
	started       time.Time

	cluster      *etcdproc.Cluster // etcd only
	tables       *tableServers     // postgres and dynamodb only
	table        string            // the scenario's lease table
	timings      lease.Timings     // the store's (storeTimings)
	draws        *drawer           // the scenario's varied configuration (config.go)
	col          *collector
	http         *http.Client
	services     []*service
	libraries    []*library
	loads        []*load
	stopping     atomic.Bool
	probeRefused atomic.Int64
	cleanups     []func()

	mu       sync.Mutex
	checks   []Check
	failures []string
	recover  time.Duration
	recWhat  string
	notes    []string
}

// newEnv starts a scenario's store (an etcd cluster, or a table on the
// run's table servers) and oracle table.
func newEnv(ctx context.Context, opts Options, tables *tableServers, id string, seed uint64) (*Env, error) {
	e := &Env{ctx: ctx, opts: opts, id: id, short: !opts.Long, rng: rand.New(rand.NewPCG(seed, uint64(len(id))<<32|uint64(id[0]))),
		dir: filepath.Join(opts.Dir, opts.Store, "s"+id), started: time.Now(), recover: -1,
		tables: tables, table: tableName(opts.Store, id), timings: storeTimings(opts.Store),
		draws: newDrawer(opts.Store, id, seed)}
	if b := e.tableMaxSelfFence(); b > 0 {
		e.draws.notice = lease.NoticeWindow(b)
	}
	if r := e.tableMaxReserve(); r > 0 {
		e.draws.window = e.restoreWindow()
	}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return nil, err
	}
	if tables != nil {
		if err := e.createTable(ctx); err != nil {
			return nil, fmt.Errorf("%s lease table %s: %w", opts.Store, e.table, err)
		}
		return e, e.openOracle(ctx)
	}
	var err error
	e.cluster, err = etcdproc.Start(ctx, etcdproc.Config{
		Dir:     filepath.Join(e.dir, "etcd"),
		Size:    3,
		Command: func(args ...string) *exec.Cmd { return opts.Command(RoleEtcdMember, args...) },
		Stderr:  &prefixWriter{w: opts.Log, prefix: "s" + id + " etcd: "},
	})
	if err != nil {
		return nil, fmt.Errorf("etcd cluster: %w", err)
	}
	if err := e.openOracle(ctx); err != nil {
		e.cluster.Close()
		return nil, err
	}
	return e, nil
}

// openOracle opens the scenario's oracle table, chaos_s<id> for etcd (as
// before there were other stores) and chaos_<store>_s<id> for the others,
// and the harness's HTTP client.
func (e *Env) openOracle(ctx context.Context) error {
	table := "chaos_s" + e.id
	if e.opts.Store != StoreEtcd {
		table = "chaos_" + e.opts.Store + "_s" + e.id
	}
	o, err := oracle.Open(ctx, oracle.Config{URL: e.opts.PostgresURL, Table: table})
	if err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	e.col = newCollector(o)
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	e.http = &http.Client{Transport: tr}
	return nil
}

// drawTimings is the scenario's holders' timings drawn in box b (once per
// scenario: every holder asking for b's gets the same), which the product's
// checks accepted.
func (e *Env) drawTimings(b timingBox) (lease.Timings, error) {
	if b.name == steadyBox.name && e.tables != nil {
		// The long mode's steady box on a table is tableSteadyBox; the
		// short mode's, whose holders' self-fence is bounded by
		// shortTableMaxSelfFence, is tableBox — the one its table
		// scenarios draw (the short mode runs 1 and 6 on PostgreSQL, 3b
		// and 7 on DynamoDB).
		b = scale(e, tableBox, tableSteadyBox)
	}
	_, seen := e.draws.timings[b.name]
	t, err := e.draws.timingsFor(b, "holders")
	if err == nil && !seen {
		e.logf("timings (%s, drawn): lease %v, renewal every %v, self-fence %v, margin %v", b.name, t.LeaseFor, t.RenewEvery, t.SelfFence, t.Margin)
	}
	return t, err
}

// fixedTimings records timings the scenario's story keeps, and why.
func (e *Env) fixedTimings(who string, t lease.Timings, why string) lease.Timings {
	e.draws.fixedTimings(who, t, why)
	return t
}

// machines draws a machine range of lo to hi numbers for the holders who,
// apart from the scenario's other ranges. A range the product refuses
// (none should: every range within 0–1023 fits the v1 layout) fails the
// scenario, loudly, rather than fall back to a fixed one.
func (e *Env) machines(who string, lo, hi int) string {
	s, err := e.draws.machines(who, lo, hi)
	if err != nil {
		e.fail("%v", err)
	}
	return s
}

// fixedMachines records a range the story keeps (worker 17's) and returns
// it.
func (e *Env) fixedMachines(who, s string) string {
	e.draws.fixedMachines(who, s)
	return s
}

// count draws how many of who (services, generators) the scenario runs,
// in [lo, hi].
func (e *Env) count(who string, lo, hi int) int { return e.draws.count(who, lo, hi) }

// fixedCount records a count the story keeps and returns it.
func (e *Env) fixedCount(who string, n int) int {
	e.draws.fixedCount(who, n)
	return n
}

// logf writes a progress line.
func (e *Env) logf(format string, args ...any) {
	if e.opts.Log != nil {
		fmt.Fprintf(e.opts.Log, "s%-3s %6.1fs  %s\n", e.id, time.Since(e.started).Seconds(), fmt.Sprintf(format, args...))
	}
}

// fail records a failure of the harness or the system that is not a
// scenario check (a malformed stream, a process that would not start).
func (e *Env) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	e.mu.Lock()
	e.failures = append(e.failures, msg)
	e.mu.Unlock()
	e.logf("FAIL: %s", msg)
}

// check records a scenario expectation.
func (e *Env) check(name string, ok bool, format string, args ...any) {
	c := Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)}
	e.mu.Lock()
	e.checks = append(e.checks, c)
	e.mu.Unlock()
	mark := "ok  "
	if !ok {
		mark = "FAIL"
	}
	e.logf("%s %s: %s", mark, name, c.Detail)
}

// note adds a line to the scenario's report.
func (e *Env) note(format string, args ...any) {
	e.mu.Lock()
	e.notes = append(e.notes, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

// recovered records a time to recover; the row shows the longest.
func (e *Env) recovered(d time.Duration, what string) {
	e.mu.Lock()
	if d > e.recover {
		e.recover, e.recWhat = d, what
	}
	e.mu.Unlock()
	e.logf("recovered in %v: %s", d.Round(time.Millisecond), what)
}

// scale picks the short or the long mode's value.
func scale[T any](e *Env, short, long T) T {
	if e.short {
		return short
	}
	return long
}

// wait lets the scenario run for d (load keeps going meanwhile).
func (e *Env) wait(d time.Duration) error { return pause(e.ctx, d) }

// waitIssuing polls s's /healthz until it answers 200 and returns when.
func (e *Env) waitIssuing(s *service, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, 500*time.Millisecond)
		status, _, _ := s.get(actx, "/healthz")
		acancel()
		if status == http.StatusOK {
			return time.Now(), nil
		}
		if err := pause(ctx, 2*time.Millisecond); err != nil {
			return time.Time{}, fmt.Errorf("%s not issuing after %v", s.name, timeout)
		}
	}
}

// waitFenced polls s's /healthz until it answers anything but 200 (or s
// stops serving) and returns when.
func (e *Env) waitFenced(s *service, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, 500*time.Millisecond)
		status, _, err := s.get(actx, "/healthz")
		acancel()
		if status != http.StatusOK && (err == nil || errors.Is(err, errNotServing)) {
			return time.Now(), nil
		}
		if err := pause(ctx, 2*time.Millisecond); err != nil {
			return time.Time{}, fmt.Errorf("%s still issuing after %v", s.name, timeout)
		}
	}
}

// healthz returns s's /healthz status code and body.
func (e *Env) healthz(s *service) (int, string) {
	ctx, cancel := context.WithTimeout(e.ctx, time.Second)
	defer cancel()
	status, body, err := s.get(ctx, "/healthz")
	if err != nil {
		return 0, err.Error()
	}
	return status, string(body)
}

// outageRecovery records, as the time to recover, the longest run of
// refused or unanswered attempts any of ss ended with a success.
func (e *Env) outageRecovery(ss []*service) {
	var longest time.Duration
	var who string
	for _, s := range ss {
		if d := s.longestOutage(); d > longest {
			longest, who = d, s.name
		}
	}
	if longest > 0 {
		e.recovered(longest, "longest a service refused in a row, callers' view ("+who+")")
	}
}

// stopAll stops the callers, then every service and holder gracefully.
func (e *Env) stopAll() {
	for _, l := range e.loads {
		l.stop()
	}
	e.stopping.Store(true)
	for _, s := range e.services {
		if n := s.errors.Load(); n > 0 {
			e.note("%s: %d attempts without an answer; the last: %v", s.name, n, s.lastErr.Load())
		}
		if n := s.waitRestarts.Load(); n > 0 {
			e.note("%s was restarted %d times while its range was full (serve exits when no number is free)", s.name, n)
		}
	}
	var wg sync.WaitGroup
	for _, s := range e.services {
		wg.Go(func() {
			if err := s.stop(); err != nil {
				e.note("stop %s: %v", s.name, err)
			}
		})
	}
	for _, l := range e.libraries {
		wg.Go(func() {
			if err := l.stop(); err != nil {
				e.note("stop %s: %v", l.name, err)
			}
		})
	}
	wg.Wait()
}

// close kills whatever is left and stops the cluster.
func (e *Env) close() {
	e.stopping.Store(true)
	for _, s := range e.services {
		s.kill()
	}
	for _, l := range e.libraries {
		if p := l.proc(); p != nil {
			e.kill(p)
		}
	}
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	if e.cluster != nil {
		e.cluster.Close()
	}
	e.http.CloseIdleConnections()
}

// prefixWriter prefixes each write (the members' stderr) for the log,
// which Run has made safe for concurrent writes.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if p.w == nil {
		return len(b), nil
	}
	p.w.Write(append([]byte(p.prefix), b...))
	return len(b), nil
}
