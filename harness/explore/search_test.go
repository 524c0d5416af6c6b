package explore

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var (
	flagSeed     = flag.Uint64("seed", 0, "run this one seed (with -store, or on every store); 0: the fixed list, or the long mode")
	flagStore    = flag.String("store", "", "the store of -seed: etcd, postgres, dynamodb, zookeeper or kubernetes (empty: every store)")
	flagDuration = flag.Duration("explore.duration", 0, "long mode: run seeds for this long per store (e.g. 1h); 0: the fixed list")
	flagStores   = flag.String("explore.stores", strings.Join(storeKinds, ","), "long mode and fixed list: the stores to search, comma-separated")
	flagStart    = flag.Uint64("explore.seed", 1, "long mode: the first seed (each store runs seeds from here on)")
	flagKeep     = flag.Int("explore.log", 50, "actions kept for a failure's log")
	flagSteps    = flag.Int("explore.steps", 0, "steps per world (0: 200 for the fixed list, 250 in the long mode)")
	flagJournal  = flag.Bool("explore.journal", true, "run the journal oracle (journal_test.go); scripts/prove-search turns it off, since a revert's duplicate path often breaks the journal first and the proof is that the duplicate is found")
	flagFirst    = flag.Bool("explore.first", false, "stop every store once one has found a duplicate (scripts/prove-search), in the fixed list and the long mode")
	flagTheme    = flag.String("explore.theme", "", "draw worlds only in these themes, comma-separated (any, regions, shared-holders, restores, cut-off, schedules, cutovers, registry): a seed that draws another takes one of these; empty: every theme")
)

// shortSeeds is the fixed list of seeds each store runs by default and
// under -short, sized by what a world costs there: a PostgreSQL world takes
// tens of milliseconds, a DynamoDB one (through the shim) about half a
// second, an etcd one up to a few seconds (each restore restarts the
// embedded server). The three run in parallel in scripts/test's race run,
// where twice these (120, 40, 30) took 162 CPU-seconds of its two cores
// (2026-12-06): halved when the Kubernetes store's step had to fit in CI's
// 20 minutes too. The search's reach is the long mode's
// (-explore.duration); scripts/prove-search checks that, with each of the
// fixes of internal/revert undone, the search from seed 1 finds a
// duplicate.
func shortSeeds(store string) []uint64 {
	n := uint64(20)
	switch store {
	case storePostgres:
		n = 60
	case storeEtcd:
		n = 15
	case storeZK:
		// Each snapshot and restore stops and starts the server's JVM
		// (1–4 s): a restores world takes 15–40 s. Run in scripts/test's
		// ZooKeeper step, on its budget (about a minute for these five).
		n = 5
	case storeK8s:
		// Each snapshot is an etcd snapshot, and each restore stops and
		// starts the API server (seconds of CPU): like ZooKeeper's, run
		// in scripts/test's ZooKeeper and Kubernetes step, where these
		// worlds were its longest part (about 4.5 minutes for five, both
		// cores busy): three, for CI's 20 minutes. The long search
		// (-explore.duration) is the reach.
		n = 3
	}
	seeds := make([]uint64, 0, n)
	for s := uint64(1); s <= n; s++ {
		seeds = append(seeds, s)
	}
	return seeds
}

// worldBudget bounds one world in real time.
const worldBudget = 45 * time.Second

// TestSearch searches for a duplicate ID: for each store, worlds drawn from
// seeds (see the package doc), every ID checked against every other.
func TestSearch(t *testing.T) {
	for _, th := range themeFilter() {
		if !slices.Contains(themes, th) {
			t.Fatalf("-explore.theme %s: no such theme; the themes are %s", th, strings.Join(themes, ", "))
		}
	}
	fig := newFigures()
	keptActions = *flagKeep
	stores := strings.Split(*flagStores, ",")
	if *flagSeed != 0 && *flagStore != "" {
		stores = []string{*flagStore}
	}
	steps := *flagSteps
	if steps == 0 {
		steps = 200
		if *flagDuration > 0 {
			steps = 250
		}
	}
	begin := time.Now()
	t.Cleanup(func() {
		if *flagDuration > 0 || testing.Verbose() {
			t.Logf("explore figures after %s:\n%s", time.Since(begin).Round(time.Second), fig)
		}
	})
	var found atomic.Bool // with -explore.first, every store stops at the first finding
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			svc := startService(t, store)
			defer svc.close()
			since := time.Now()
			switch {
			case *flagSeed != 0:
				runSeed(t, svc, *flagSeed, store, steps, fig, 1, since)
			case *flagDuration > 0:
				end := since.Add(*flagDuration)
				for seed, n := *flagStart, 1; time.Now().Before(end); seed, n = seed+1, n+1 {
					if *flagFirst && found.Load() {
						t.Logf("stopped after %d seeds: another store found a duplicate", n-1)
						return
					}
					if !runSeed(t, svc, seed, store, steps, fig, n, since) {
						found.Store(true)
						return
					}
				}
			default:
				for i, seed := range shortSeeds(store) {
					if *flagFirst && found.Load() {
						t.Logf("stopped after %d seeds: another store found a duplicate", i)
						return
					}
					if !runSeed(t, svc, seed, store, steps, fig, i+1, since) {
						found.Store(true)
						return
					}
				}
			}
		})
	}
}

// foundMarker starts the one line a failing seed prints for
// scripts/prove-search: the store, the seed, how many seeds the store ran
// up to it and for how long.
const foundMarker = "EXPLORE FOUND"

// runSeed runs one world and fails t with its finding. It reports whether
// the world passed. tried and since count the store's seeds and time so
// far.
func runSeed(t *testing.T, svc service, seed uint64, store string, steps int, fig *figures, tried int, since time.Time) bool {
	t.Helper()
	cfg := draw(seed, store, steps)
	began := time.Now()
	failure, trace := runWorld(t, svc, cfg, fig)
	fig.add("seeds run", 1)
	fig.add("seeds run: "+store, 1)
	fig.add("theme: "+cfg.Theme, 1)
	if failure != "" {
		t.Errorf("%s\n(seed %d took %s)\n%s store=%s seed=%d seeds=%d elapsed=%s",
			failure, seed, time.Since(began).Round(time.Millisecond), foundMarker, store, seed, tried, time.Since(since).Round(100*time.Millisecond))
		return false
	}
	if testing.Verbose() && *flagSeed != 0 {
		t.Logf("world of seed %d:\n%s\n%s", seed, cfg, trace)
	}
	if testing.Verbose() {
		t.Logf("seed %d (%s, theme %s): no duplicate in %s", seed, store, cfg.Theme, time.Since(began).Round(time.Millisecond))
	}
	return true
}

// runWorld builds the world of cfg on a fresh space of svc, runs its steps
// and returns its finding ("" for none) and its action log.
func runWorld(t *testing.T, svc service, cfg *config, fig *figures) (string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	sp, err := svc.space(ctx, cfg.Seed, cfg.stores())
	cancel()
	if err != nil {
		return fmt.Sprintf("%s: seed %d: a fresh %s space: %v", setupMarker, cfg.Seed, cfg.Store, err), ""
	}
	defer sp.close()
	w, err := newWorld(t, cfg, sp, fig)
	if err != nil {
		return fmt.Sprintf("%s: seed %d: %v", setupMarker, cfg.Seed, err), ""
	}
	defer w.shutdown()
	if cfg.SnapshotFirst {
		w.snapshot()
	}
	for _, p := range w.procs {
		w.startHolders(p, w.startable(p, p.holders))
	}
	deadline := time.Now().Add(worldBudget)
	for w.step = 1; w.step <= cfg.Steps && w.failure == ""; w.step++ {
		if time.Now().After(deadline) {
			fig.add("worlds cut short by their time budget", 1)
			break
		}
		w.stepNow.Store(int64(w.step))
		w.tickCutOffs()
		if len(w.next) > 0 {
			f := w.next[0]
			w.next = w.next[1:]
			f(w)
			continue
		}
		w.pick().do(w)
		w.startWaiting()
		if w.step%journalEvery == 0 {
			w.checkJournal(fmt.Sprintf("at step %d", w.step))
		}
	}
	// The journal with the holders still holding (their entries end at
	// their marks), then once each has closed (at the mark its release
	// wrote).
	w.checkJournal("at the end of the world")
	for _, h := range w.all {
		w.stop(h)
	}
	w.checkJournal("after every holder closed")
	fig.add("IDs checked", int(w.led.checked))
	fig.add("duplicates in a clone's window (tolerated)", w.led.tolerated)
	fig.add("dropped below the store (shim)", sp.dropped())
	for _, p := range w.procs {
		for _, st := range p.stores {
			lost, refused := st.counts()
			fig.add("replies lost (wrapper)", lost)
			fig.add("calls refused while cut off", refused)
		}
	}
	return w.failure, w.log.String()
}

// shutdown closes every keeper, paused or not, and every clone.
func (w *world) shutdown() {
	w.closeClones()
	for _, h := range w.all {
		w.stop(h)
	}
	for _, p := range w.procs {
		for _, st := range p.stores {
			st.Close()
		}
	}
}
