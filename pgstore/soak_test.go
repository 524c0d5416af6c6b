//go:build linux

package pgstore_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/soaktest"
	"github.com/snowfence/snowfence/lease"
)

// TestSoakKilledHoldersNeverDuplicate runs 8 child processes, one Keeper and
// generator each, on machine numbers 0–5 of one table (so two holders are
// always waiting for a number), minting continuously, while the parent
// SIGKILLs a random process every 0.3–1.5 s and starts a fresh one in its
// place; a killed holder's number comes free when its lease (3 s) runs out.
// Every ID a child sent counts (a killed child's unsent IDs never left
// it). No ID may occur twice, no two holders may stamp the same millisecond
// on one number, and each holder's IDs must strictly increase. It logs the
// store requests (SQL statements) per second per holder.
//
// SNOWFENCE_SOAK_SEED replays a kill schedule; the seed is logged.
func TestSoakKilledHoldersNeverDuplicate(t *testing.T) {
	url := testURL(t)
	const procs, perProc = 8, 1
	rng := lease.Range{Lo: 0, Hi: 5}
	dur := 15 * time.Second
	if testing.Short() {
		dur = 3 * time.Second
	}
	// The first children issue only after the store's notice window: every
	// child's store bounds the table's self-fence at the holders' own
	// (Config.TestBound), as a test fleet on short timings may.
	const selfFence = 2 * time.Second
	warm := lease.NoticeWindow(selfFence) + 10*time.Second // slack for claims on a loaded machine
	pool := testPool(t, 4)
	table := newTable(t, pool)
	openStore(t, pool, table) // creates the table
	cfg := soakConfig{URL: url, Table: table, HolderSpec: soaktest.HolderSpec{Range: rng, Holders: perProc, Batch: 10,
		Every: 10 * time.Millisecond, Lifetime: warm + dur + 30*time.Second,
		LeaseFor: 3 * time.Second, RenewEvery: 500 * time.Millisecond, SelfFence: selfFence}}
	res := soaktest.Soak{Name: "pgstore soak", Procs: procs, Warmup: warm, Duration: dur, MinHolders: rng.Hi - rng.Lo + 1,
		Child: soaktest.Child{Test: "TestSoakChild", Env: soakChildEnv, Config: cfg}}.Run(t)

	// Requests per second of holder life: over every incarnation, and apart
	// for those that held a number at some point and those that only waited.
	type reqs struct{ stmts, calls, extends, ms int64 }
	var all, held reqs
	for inc, f := range res.Reports {
		if len(f) != 4 {
			continue
		}
		r := reqs{f[0], f[1], f[2], f[3]}
		all.stmts, all.calls, all.extends, all.ms = all.stmts+r.stmts, all.calls+r.calls, all.extends+r.extends, all.ms+r.ms
		if res.Issued[inc] {
			held.stmts, held.calls, held.extends, held.ms = held.stmts+r.stmts, held.calls+r.calls, held.extends+r.extends, held.ms+r.ms
		}
	}
	rate := func(n, ms int64) float64 {
		if ms == 0 {
			return 0
		}
		return float64(n) / (float64(ms) / 1000) / perProc
	}
	waited := reqs{all.stmts - held.stmts, all.calls - held.calls, all.extends - held.extends, all.ms - held.ms}
	t.Logf("pgstore soak: %.1f store requests/s per holder; "+
		"%d SQL statements for %d lease.Store calls in %.1f holder-seconds (lease 3 s, renewal every 0.5 s): "+
		"%.1f statements/s (%.1f calls, %.1f renewals) per holder that held a number, %.1f statements/s (%.1f calls) per holder that only waited",
		rate(all.stmts, all.ms), all.stmts, all.calls, float64(all.ms)/1000,
		rate(held.stmts, held.ms), rate(held.calls, held.ms), rate(held.extends, held.ms), rate(waited.stmts, waited.ms), rate(waited.calls, waited.ms))
}
