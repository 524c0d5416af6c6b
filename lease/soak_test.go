//go:build linux

package lease_test

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// TestSoakKilledHoldersNeverDuplicate runs 16 holders in 8 child processes
// on one small range of machine numbers (0–23, so numbers change hands
// often), minting continuously, while the parent SIGKILLs a random process
// every 0.3–1.5 s and starts a fresh one in its place, or now and then
// SIGSTOPs one for 1–4 s instead. Every ID a child
// printed counts (a killed child's unprinted IDs never left it). The parent
// checks that no ID occurs twice, that no two holders ever stamped the same
// millisecond on the same number (the fence's promise, stronger than
// uniqueness), and that each holder's IDs strictly increase.
//
// SNOWFENCE_SOAK_SEED replays a kill schedule; the seed is logged.
func TestSoakKilledHoldersNeverDuplicate(t *testing.T) {
	const procs, perProc = 8, 2
	dur := 15 * time.Second
	if testing.Short() {
		dur = 4 * time.Second
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SNOWFENCE_SOAK_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SNOWFENCE_SOAK_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("soak: seed %d (SNOWFENCE_SOAK_SEED=%d replays the kill schedule), %v", seed, seed, dur)
	prng := rand.New(rand.NewPCG(seed, 0))

	c := etcdtest.Start(t, 1)
	cfg := childConfig{
		Endpoints: c.Endpoints(), Prefix: "/test/" + t.Name(), Range: lease.Range{Lo: 0, Hi: 23},
		Holders: perProc, Batch: 10, Every: 5 * time.Millisecond, Lifetime: dur + 30*time.Second,
		LeaseFor: shortLeaseFor, RenewEvery: shortRenewEvery, SelfFence: shortSelfFence,
	}
	col := &soakCollector{t: t}
	children := make([]*childProc, procs)
	for i := range children {
		children[i] = col.start(cfg)
	}
	// The schedule: every 0.3–1.5 s one action on a random process: two
	// times in three a SIGKILL and a fresh process in its place, else a
	// SIGSTOP for 1–4 s (often past the 3 s lease: it wakes to find its
	// numbers taken). The waits are the schedule of the story, not
	// synchronisation.
	type pause struct {
		ch    *childProc
		until time.Time
	}
	var paused []pause
	resume := func(now time.Time) {
		kept := paused[:0]
		for _, p := range paused {
			if now.Before(p.until) {
				kept = append(kept, p)
				continue
			}
			p.ch.signal(syscall.SIGCONT)
		}
		paused = kept
	}
	gap := func() time.Duration {
		return 300*time.Millisecond + time.Duration(prng.Int64N(int64(1200*time.Millisecond)))
	}
	deadline := time.Now().Add(dur)
	next := time.Now().Add(gap())
	kills, pauses := 0, 0
	for range 10000 {
		wake := next
		for _, p := range paused {
			if p.until.Before(wake) {
				wake = p.until
			}
		}
		if wake.After(deadline) {
			break
		}
		tick(t.Context(), time.Until(wake))
		now := time.Now()
		resume(now)
		if now.Before(next) {
			continue
		}
		next = now.Add(gap())
		i := prng.IntN(procs)
		if prng.IntN(3) == 0 && !slices.ContainsFunc(paused, func(p pause) bool { return p.ch == children[i] }) {
			children[i].signal(syscall.SIGSTOP)
			paused = append(paused, pause{children[i], now.Add(time.Second + time.Duration(prng.Int64N(int64(3*time.Second))))})
			pauses++
			continue
		}
		paused = slices.DeleteFunc(paused, func(p pause) bool { return p.ch == children[i] })
		children[i].kill()
		kills++
		children[i] = col.start(cfg)
	}
	tick(t.Context(), time.Until(deadline))
	resume(time.Now().Add(time.Hour))
	var wg sync.WaitGroup
	for _, ch := range children {
		wg.Go(func() { ch.finish(10 * time.Second) })
	}
	wg.Wait()

	col.mu.Lock()
	defer col.mu.Unlock()
	recs := col.recs
	slices.SortFunc(recs, func(a, b soakRec) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	dups, shared := 0, 0
	for i := 1; i < len(recs); i++ {
		a, b := recs[i-1], recs[i]
		switch {
		case a.id == b.id:
			dups++
			if dups <= 5 {
				t.Errorf("ID %d printed twice (holders %d and %d)", a.id, a.holder, b.holder)
			}
		case a.id>>12 == b.id>>12 && a.holder != b.holder:
			shared++
			if shared <= 5 {
				t.Errorf("holders %d and %d both stamped %v on machine %d (IDs %d, %d)", a.holder, b.holder,
					snowfence.V1().TimeOf(snowfence.ID(a.id)), snowfence.V1().Split(snowfence.ID(a.id)).Machine, a.id, b.id)
			}
		}
	}
	machines := make(map[int]bool)
	holders := make(map[int32]bool)
	for _, r := range recs {
		machines[snowfence.V1().Split(snowfence.ID(r.id)).Machine] = true
		holders[r.holder] = true
	}
	for _, f := range col.fatal {
		t.Errorf("child: %s", f)
	}
	if col.disorder > 0 {
		t.Errorf("%d batches not above their holder's previous one", col.disorder)
	}
	t.Logf("soak: %d IDs from %d holders, %d kills, %d duplicates (%d processes, %d pauses, %d machine numbers used, %d refused batches, %d failed claims)",
		len(recs), len(holders), kills, dups, col.incarnations, pauses, len(machines), col.refused, col.noclaim)
	if dups != 0 || shared != 0 {
		t.Errorf("%d duplicate IDs, %d milliseconds stamped by two holders on one number", dups, shared)
	}
	if len(holders) < procs*perProc || kills == 0 || len(recs) < 1000 {
		t.Errorf("soak too thin to mean much: %d holders issued, %d kills, %d IDs", len(holders), kills, len(recs))
	}
}

// soakRec is one ID and the holder (process incarnation × holder index)
// that printed it.
type soakRec struct {
	id     int64
	holder int32
}

// soakCollector gathers what every child prints.
type soakCollector struct {
	t            *testing.T
	mu           sync.Mutex
	recs         []soakRec
	incarnations int
	disorder     int
	refused      int
	noclaim      int
	fatal        []string
}

// start starts a child process whose lines feed the collector.
func (col *soakCollector) start(cfg childConfig) *childProc {
	col.mu.Lock()
	inc := col.incarnations
	col.incarnations++
	col.mu.Unlock()
	last := make(map[int]int64) // per holder index; only this child's reader uses it
	return startChild(col.t, cfg, func(line string) {
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "ids":
			f := strings.Fields(rest)
			idx, err := strconv.Atoi(f[0])
			if err != nil {
				col.t.Errorf("child line %q: %v", line, err)
				return
			}
			holder := int32(inc*cfg.Holders + idx)
			batch := make([]soakRec, 0, len(f)-1)
			disorder := 0
			for _, s := range f[1:] {
				id, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					col.t.Errorf("child line %q: %v", line, err)
					return
				}
				if id <= last[idx] {
					disorder++
				}
				last[idx] = id
				batch = append(batch, soakRec{id, holder})
			}
			col.mu.Lock()
			col.recs = append(col.recs, batch...)
			col.disorder += disorder
			col.mu.Unlock()
		case "refused":
			col.mu.Lock()
			col.refused++
			col.mu.Unlock()
		case "noclaim":
			col.mu.Lock()
			col.noclaim++
			col.mu.Unlock()
		case "fatal":
			col.mu.Lock()
			col.fatal = append(col.fatal, rest)
			col.mu.Unlock()
		}
	})
}
