package explore

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// TestNodeStartIsTrueTime checks the world's model of node.Start's wait for
// its first grant (here: every number's mark raised 20 s ahead): it is true
// time passing for the whole world, as it is for a real fleet, where the
// other processes keep running while one starts. A process started (and
// restarted) through node.Start or the service keeps its clock within
// ntpThreshold of true time, every other running process has seen that
// time pass, and the keeper running beside the starts still holds and
// mints. On each store, a world of a keeper process, a node process and a
// service process; the node and service processes then restart twice.
func TestNodeStartIsTrueTime(t *testing.T) {
	for _, store := range storeKinds {
		t.Run(store, func(t *testing.T) {
			svc := startService(t, store)
			defer svc.close()
			rng := lease.Range{Lo: 0, Hi: 7}
			cfg := &config{Seed: 990_001, Store: store, Theme: themeAny, Procs: []procConfig{
				{Rate: 1, Keepers: 1, Range: rng, Entry: entryKeeper, HolderMode: holdersUnique},
				{Rate: 1, Keepers: 2, Range: rng, Entry: entryNode, HolderMode: holdersUnique},
				{Rate: 1.05, Keepers: 1, Range: rng, Entry: entryService, HolderMode: holdersUnique, Offset: 40 * time.Millisecond},
			}}
			ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
			sp, err := svc.space(ctx, cfg.Seed, cfg.stores())
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			defer sp.close()
			w, err := newWorld(t, cfg, sp, newFigures())
			if err != nil {
				t.Fatal(err)
			}
			defer w.shutdown()
			for _, p := range w.procs {
				w.startHolders(p, p.holders)
			}
			checkStartedInTrueTime(t, w, "after the first starts")
			for round := range 2 {
				for _, p := range w.procs[1:] {
					for _, h := range p.holders {
						w.stop(h)
					}
					// Every mark 20 s ahead of the latest clock: each claim
					// starts there, and node.Start waits for its first grant.
					ahead := 20 * time.Second
					ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
					st, err := w.sp.open(ctx, 0, 0)
					if err == nil {
						_, err = raiseWithRetry(ctx, st, 0, rng, w.latestClock()+ahead.Milliseconds())
						st.Close()
					}
					cancel()
					if err != nil {
						t.Fatalf("raise the marks: %v", err)
					}
					before := w.trueNow
					w.startHolders(p, p.holders)
					if waited := w.trueNow - before; waited < ahead-ntpThreshold {
						t.Errorf("round %d: process %d (%s) started in %s of true time, though its claim starts %s ahead",
							round, p.idx, p.cfg.entry(), waited, ahead)
					}
				}
				checkStartedInTrueTime(t, w, "after a restart")
			}
		})
	}
}

// checkStartedInTrueTime fails t unless every holder of w runs, every
// process has seen all of true time with its clock within ntpThreshold of
// it, and every holder mints.
func checkStartedInTrueTime(t *testing.T, w *world, when string) {
	t.Helper()
	for _, p := range w.procs {
		if p.clk.trueElapsed != w.trueNow {
			t.Errorf("%s: process %d (%s) has seen %s of true time, the world %s", when, p.idx, p.cfg.entry(), p.clk.trueElapsed, w.trueNow)
		}
		if off := time.Duration(p.clk.Now().WallMs-p.clk.trueNowMs()) * time.Millisecond; off > ntpThreshold || off < -ntpThreshold {
			t.Errorf("%s: process %d (%s): its clock is %s off true time, past ntpThreshold (%s)", when, p.idx, p.cfg.entry(), off, ntpThreshold)
		}
		for _, h := range p.holders {
			if !h.running() {
				t.Errorf("%s: holder %d of process %d (%s) is not running (refused: %q)", when, h.idx, p.idx, p.cfg.entry(), h.refused)
				continue
			}
			w.mint(h, 1, true)
		}
	}
	if w.failure != "" {
		t.Fatalf("%s: the world failed: %s", when, w.failure)
	}
	if t.Failed() {
		t.Fatalf("%s:\n%s", when, &w.log)
	}
}
