package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/snowfence/snowfence/harness/chaos/oracle"
)

// Options configure a run of the suite.
type Options struct {
	// Long runs every scenario at full length (≥ 100 million IDs in all);
	// false runs the short mode CI runs (minutes).
	Long bool
	// Seed makes a run repeatable: which process is killed when, and the
	// like, derive from it. Zero: 1.
	Seed uint64
	// Scenarios to run, by id ("1", "5b") or number ("5" is 5a–5e). Empty:
	// every scenario of the mode on the store (see scenario.shortOn); a
	// scenario named here runs in either mode. One that does not apply to
	// the store (an etcd fault on a table) gets a row marked n/a.
	Scenarios []string
	// Store is the lease store the holders lease from: one of Stores().
	// Empty: StoreEtcd. The harness runs the store's servers itself (a
	// fresh etcd cluster per scenario; one PostgreSQL cluster, dynalite,
	// ZooKeeper server or kube-apiserver per run, with a fresh table,
	// path or namespace per scenario); only the oracle's PostgreSQL is
	// given (PostgresURL).
	Store string
	// NoFence runs the library holders with the fence disabled
	// (--unsafe-no-fence): the suite must then find duplicates.
	NoFence bool
	// PostgresURL is the oracle's database. Required.
	PostgresURL string
	// Snowfence is the path of the snowfence binary the services run;
	// required unless only library holders run (NoFence).
	Snowfence string
	// Command returns a command that runs this harness's child role (see
	// ChildMain) with args. Required.
	Command func(role string, args ...string) *exec.Cmd
	// Dir holds the scenarios' etcd data. Required.
	Dir string
	// Log receives progress lines; nil discards them. Run serialises its
	// writes.
	Log io.Writer
	// Lanes is how many scenarios run at once on etcd: 1 or 2 (zero: 1).
	// With 2 the first half of the selection runs beside the second,
	// each scenario on an etcd cluster of its own; most of their time is
	// holders waiting out their claims' notice windows. On a lease table
	// the scenarios share the run's servers (9a stops PostgreSQL) and run
	// one at a time whatever Lanes says.
	Lanes int

	// zoneSlot keeps the network namespaces and addresses of one lane
	// apart from another's in the same process (storeSlot; Run sets it).
	zoneSlot int
}

// Run runs the selected scenarios, one after another (on etcd in up to
// two lanes, Options.Lanes), and returns their rows in the suite's order.
// A scenario that cannot be set up still gets a failing row.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.PostgresURL == "" || opts.Command == nil || opts.Dir == "" {
		return nil, errors.New("chaos: Options need PostgresURL, Command and Dir")
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.Store == "" {
		opts.Store = StoreEtcd
	}
	if !slices.Contains(Stores(), opts.Store) {
		return nil, fmt.Errorf("chaos: store %q: use one of %s", opts.Store, strings.Join(Stores(), ", "))
	}
	if opts.Log != nil {
		opts.Log = &lockedWriter{w: opts.Log}
	}
	sel, err := selectScenarios(opts.Scenarios)
	if err != nil {
		return nil, err
	}
	rep := &Report{Mode: "short", Seed: opts.Seed, Started: time.Now().UTC(), NoFence: opts.NoFence, Stores: []string{opts.Store}}
	if opts.Long {
		rep.Mode = "long"
	}
	var tables *tableServers
	if opts.Store != StoreEtcd {
		if tables, err = startTableServers(ctx, opts.Store, opts); err != nil {
			return nil, fmt.Errorf("chaos: the %s servers: %w", opts.Store, err)
		}
		defer tables.close()
	}
	rows := make([]*Row, len(sel))
	var run []int // indexes into sel of the scenarios that run
	for i, sc := range sel {
		if why := sc.skip(opts.Store, opts.Long, len(opts.Scenarios) > 0); why != "" {
			rows[i] = &Row{Scenario: sc.id, Name: sc.name, Store: opts.Store, Seed: opts.Seed, Skipped: why, RecoverMs: -1, Pass: true}
			continue
		}
		run = append(run, i)
	}
	lanes := [][]int{run}
	if opts.Store == StoreEtcd && opts.Lanes >= 2 && len(run) > 1 {
		lanes = [][]int{run[:(len(run)+1)/2], run[(len(run)+1)/2:]}
	}
	opts.zoneSlot = storeSlot(opts.Store)
	var wg sync.WaitGroup
	for l, lane := range lanes {
		lopts := opts
		if l > 0 {
			lopts.zoneSlot = laneSlot // the tables' slots may be in use beside it
		}
		wg.Go(func() {
			for _, i := range lane {
				if ctx.Err() != nil {
					return
				}
				row := runScenario(ctx, lopts, tables, sel[i])
				rows[i] = &row
			}
		})
	}
	wg.Wait()
	for _, r := range rows {
		if r != nil { // nil: not run, the context ended first
			rep.Rows = append(rep.Rows, *r)
		}
	}
	rep.Elapsed = time.Since(rep.Started).Round(time.Millisecond).String()
	return rep, ctx.Err()
}

// selectScenarios resolves ids ("5" means every 5x).
func selectScenarios(ids []string) ([]scenario, error) {
	all := scenarios()
	if len(ids) == 0 {
		return all, nil
	}
	var out []scenario
	for _, id := range ids {
		id = strings.TrimSpace(id)
		n := len(out)
		for _, sc := range all {
			if sc.id == id || strings.TrimRight(sc.id, "abcdefghijklmnopqrstuvwxyz") == id {
				out = append(out, sc)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("chaos: no scenario %q (have 1–7, 3b, 5a–5h, 8a–8c, 9a–9g, 10a–10f, 11, 12a–12d, 13a–13d)", id)
		}
	}
	return out, nil
}

// runScenario sets a scenario up, runs it, stops everything and checks.
func runScenario(ctx context.Context, opts Options, tables *tableServers, sc scenario) Row {
	row := Row{Scenario: sc.id, Name: sc.name, Store: opts.Store, Seed: opts.Seed}
	start := time.Now()
	env, err := newEnv(ctx, opts, tables, sc.id, opts.Seed)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	defer env.close()
	env.logf("start: %s", sc.name)
	runErr := sc.run(env)
	env.stopAll()

	col := env.col
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
	res, oerr := col.oracle.Close(cctx)
	cancel()
	memDups, memEx := oracle.Duplicates(col.ids, 5)

	row.IDs = int64(len(col.ids))
	row.Duplicates = res.Duplicates
	row.DuplicatesMemory = memDups
	row.OrderViolations = col.order
	row.AheadOfClock = col.ahead
	for _, l := range env.loads {
		row.Refused += l.refused.Load()
		row.Failed += l.failed.Load()
		row.Lost += l.lost.Load()
		row.Requests += l.requests.Load()
	}
	for _, l := range env.libraries {
		row.Refused += l.refusals()
	}
	row.Refused += env.probeRefused.Load()
	row.RecoverMs = -1
	if env.recover >= 0 {
		row.RecoverMs = float64(env.recover.Microseconds()) / 1000
		row.RecoverWhat = env.recWhat
	}
	row.Seconds = time.Since(start).Seconds()
	cfg := env.draws.cfg
	row.Config = &cfg
	row.Checks = env.checks
	row.Notes = env.notes
	row.Failures = env.failures
	for _, ex := range res.Examples {
		row.Examples = append(row.Examples, fmt.Sprintf("id %d issued by sources %v", ex.ID, ex.Sources))
	}
	for _, id := range memEx {
		row.Examples = append(row.Examples, fmt.Sprintf("id %d (in memory)", id))
	}
	row.Examples = append(row.Examples, col.orderEx...)

	var errs []string
	if runErr != nil {
		errs = append(errs, "scenario: "+runErr.Error())
	}
	if oerr != nil {
		errs = append(errs, "oracle: "+oerr.Error())
	}
	if col.oracleErr != nil {
		errs = append(errs, "oracle add: "+col.oracleErr.Error())
	}
	if res.Received != row.IDs {
		errs = append(errs, fmt.Sprintf("oracle received %d IDs, the collector %d", res.Received, row.IDs))
	}
	if res.Duplicates != memDups {
		errs = append(errs, fmt.Sprintf("the oracle counts %d duplicates, the in-memory check %d", res.Duplicates, memDups))
	}
	row.Error = strings.Join(errs, "; ")
	row.Pass = row.Error == "" && len(row.Failures) == 0 && row.Duplicates == 0 && row.DuplicatesMemory == 0 &&
		row.Lost == 0 && row.OrderViolations == 0 && row.AheadOfClock == 0 &&
		!slices.ContainsFunc(row.Checks, func(c Check) bool { return !c.OK })
	env.logf("done: %d IDs, %d duplicates (PK) / %d (memory), %d refused, %d lost, pass=%v %s",
		row.IDs, row.Duplicates, row.DuplicatesMemory, row.Refused, row.Lost, row.Pass, row.Error)
	col.ids = nil
	return row
}

// lockedWriter serialises the progress lines of the harness's goroutines
// and the etcd members' stderr copiers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
