//go:build linux

package soaktest

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testkit/wire"
)

// SeedEnv names the environment variable that replays a soak's schedule.
const SeedEnv = "SNOWFENCE_SOAK_SEED"

// Seed returns the seed in SNOWFENCE_SOAK_SEED, or one from the clock when
// it is unset; a value that does not parse fails t.
func Seed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(SeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", SeedEnv, s, err)
		}
		seed = v
	}
	return seed
}

// Rec is one ID and the holder (process incarnation × holders per process +
// holder index) that sent it.
type Rec struct {
	ID     int64
	Holder int32
}

// Collector starts child processes and gathers what every one sends.
type Collector struct {
	t     *testing.T
	child Child

	mu           sync.Mutex
	recs         []Rec
	incarnations int
	disorder     int
	refused      int
	noclaim      int
	fatal        []string
	issued       map[int]bool
	reports      map[int][]int64
	// holders are the holders that issued at least one ID; newHolder is
	// closed (and replaced) each time one is added (WaitHolders).
	holders   map[int32]bool
	newHolder chan struct{}
}

// NewCollector returns a Collector starting children as c.
func NewCollector(t *testing.T, c Child) *Collector {
	return &Collector{t: t, child: c, issued: map[int]bool{}, reports: map[int][]int64{},
		holders: map[int32]bool{}, newHolder: make(chan struct{})}
}

// WaitHolders waits until n holders have issued at least one ID, or ctx
// ends; it reports whether they had.
func (col *Collector) WaitHolders(ctx context.Context, n int) bool {
	for {
		col.mu.Lock()
		have, next := len(col.holders), col.newHolder
		col.mu.Unlock()
		if have >= n {
			return true
		}
		select {
		case <-next:
		case <-ctx.Done():
			return false
		}
	}
}

// Start starts a child process (a new incarnation) whose frames feed col.
func (col *Collector) Start() *Proc {
	col.mu.Lock()
	inc := col.incarnations
	col.incarnations++
	col.mu.Unlock()
	holders := col.child.Config.Spec().Holders
	last := make(map[int]int64) // per holder index; only this child's reader uses it
	return Spawn(col.t, col.child, func(f wire.Frame) {
		switch f.Kind {
		case wire.KindIDs:
			if f.Gen >= holders {
				col.t.Errorf("child frame %q: holder %d of %d", f, f.Gen, holders)
				return
			}
			holder := int32(inc*holders + f.Gen)
			batch := make([]Rec, 0, len(f.Vals))
			disorder := 0
			for _, id := range f.Vals {
				if id <= last[f.Gen] {
					disorder++
				}
				last[f.Gen] = id
				batch = append(batch, Rec{id, holder})
			}
			col.mu.Lock()
			col.recs = append(col.recs, batch...)
			col.disorder += disorder
			col.issued[inc] = true
			if len(batch) > 0 && !col.holders[holder] {
				col.holders[holder] = true
				close(col.newHolder)
				col.newHolder = make(chan struct{})
			}
			col.mu.Unlock()
		case wire.KindStats:
			col.mu.Lock()
			col.reports[inc] = f.Vals
			col.mu.Unlock()
		case wire.KindRefused, wire.KindFenced:
			col.mu.Lock()
			col.refused++
			col.mu.Unlock()
		case wire.KindNoClaim:
			col.mu.Lock()
			col.noclaim++
			col.mu.Unlock()
		case wire.KindFatal:
			col.mu.Lock()
			col.fatal = append(col.fatal, f.Text)
			col.mu.Unlock()
		}
	})
}

// Result is what a soak saw, for a test's own log lines.
type Result struct {
	// IDs, Holders and Machines count the IDs sent, the holders that
	// sent any and the machine numbers they were stamped with.
	IDs, Holders, Machines int
	// Dups and Shared count duplicate IDs and milliseconds stamped by two
	// holders on one number.
	Dups, Shared int
	// Disorder counts IDs not above their holder's previous one.
	Disorder int
	// Incarnations counts the processes started; Kills and Pauses the
	// SIGKILLs and SIGSTOPs of the schedule.
	Incarnations, Kills, Pauses int
	// Refused and NoClaim count refused batches and failed claims.
	Refused, NoClaim int
	// Reports holds each incarnation's last request counts (its last
	// stats frame), and Issued the incarnations that sent IDs.
	Reports map[int][]int64
	Issued  map[int]bool
}

// Check sorts recs and reports (as errors on t, the first five of each
// kind, then a summary) IDs that occur twice and milliseconds that two
// holders stamped on the same number. It returns the counts of each.
func Check(t *testing.T, recs []Rec) (dups, shared int) {
	t.Helper()
	slices.SortFunc(recs, func(a, b Rec) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	for i := 1; i < len(recs); i++ {
		a, b := recs[i-1], recs[i]
		switch {
		case a.ID == b.ID:
			dups++
			if dups <= 5 {
				t.Errorf("ID %d sent twice (holders %d and %d)", a.ID, a.Holder, b.Holder)
			}
		case a.ID>>12 == b.ID>>12 && a.Holder != b.Holder:
			shared++
			if shared <= 5 {
				t.Errorf("holders %d and %d both stamped %v on machine %d (IDs %d, %d)", a.Holder, b.Holder,
					snowfence.V1().TimeOf(snowfence.ID(a.ID)), snowfence.V1().Split(snowfence.ID(a.ID)).Machine, a.ID, b.ID)
			}
		}
	}
	if dups != 0 || shared != 0 {
		t.Errorf("%d duplicate IDs, %d milliseconds stamped by two holders on one number", dups, shared)
	}
	return dups, shared
}

// Soak is one multi-process soak run.
type Soak struct {
	// Name prefixes the log lines ("pgstore soak").
	Name string
	// Procs child processes run at once, each as Child.
	Procs int
	Child Child
	// Duration is how long the schedule runs.
	Duration time.Duration
	// Warmup is how long the first children run undisturbed before the
	// schedule starts: every claim's first grant waits out the store's
	// notice window (lease.Store.MaxNoticeWindow), so a child issues only
	// that long after it claimed, and a schedule that killed the first
	// children before would leave nothing issuing to kill or pause.
	Warmup time.Duration
	// With Pauses, one action in three SIGSTOPs the process for 1–4 s
	// instead of killing it.
	Pauses bool
	// MinHolders is how many holders must have issued IDs for the soak to
	// mean something (with at least one kill and 1000 IDs).
	MinHolders int
}

// holdersWait bounds how long past the warm-up Run waits for MinHolders
// holders to issue before the kills begin.
const holdersWait = 2 * time.Minute

// Run runs the soak: s.Procs children at once, and after s.Warmup (and
// once MinHolders holders have issued, waiting at most holdersWait more),
// while, every 0.3–1.5 s on a
// schedule drawn from Seed, a random one is SIGKILLed and a fresh one
// started in its place (or, with s.Pauses, one time in three SIGSTOPped for
// 1–4 s); then it closes every child's stdin, waits for them and checks
// everything they sent: no fatal frames, no duplicate IDs, no millisecond
// stamped by two holders on one number, each holder's IDs strictly
// increasing, and enough of a soak to mean something. It logs a summary
// and returns what it saw.
func (s Soak) Run(t *testing.T) Result {
	t.Helper()
	seed := Seed(t)
	t.Logf("%s: seed %d (%s=%d replays the kill schedule), %v after a warm-up of %v", s.Name, seed, SeedEnv, seed, s.Duration, s.Warmup)
	prng := rand.New(rand.NewPCG(seed, 0))
	col := NewCollector(t, s.Child)
	children := make([]*Proc, s.Procs)
	for i := range children {
		children[i] = col.Start()
	}
	sleep(t.Context(), s.Warmup) // the story's schedule, not synchronisation
	// The kills begin once every first child's holders have issued: on a
	// loaded machine a claim and its notice window can outlast the
	// warm-up, and a child killed before it issued proves nothing.
	wctx, cancel := context.WithTimeout(t.Context(), holdersWait)
	if !col.WaitHolders(wctx, s.MinHolders) {
		t.Logf("%s: %d holders had not issued %v after the warm-up; the kills begin anyway", s.Name, s.MinHolders, holdersWait)
	}
	cancel()
	// The schedule: every 0.3–1.5 s one action on a random process. The
	// waits are the schedule of the story, not synchronisation.
	type pause struct {
		ch    *Proc
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
			p.ch.Signal(syscall.SIGCONT)
		}
		paused = kept
	}
	gap := func() time.Duration {
		return 300*time.Millisecond + time.Duration(prng.Int64N(int64(1200*time.Millisecond)))
	}
	deadline := time.Now().Add(s.Duration)
	next := time.Now().Add(gap())
	var res Result
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
		sleep(t.Context(), time.Until(wake))
		now := time.Now()
		resume(now)
		if now.Before(next) {
			continue
		}
		next = now.Add(gap())
		i := prng.IntN(s.Procs)
		if s.Pauses && prng.IntN(3) == 0 && !slices.ContainsFunc(paused, func(p pause) bool { return p.ch == children[i] }) {
			children[i].Signal(syscall.SIGSTOP)
			paused = append(paused, pause{children[i], now.Add(time.Second + time.Duration(prng.Int64N(int64(3*time.Second))))})
			res.Pauses++
			continue
		}
		paused = slices.DeleteFunc(paused, func(p pause) bool { return p.ch == children[i] })
		children[i].Kill()
		res.Kills++
		children[i] = col.Start()
	}
	sleep(t.Context(), time.Until(deadline))
	resume(time.Now().Add(time.Hour))
	var wg sync.WaitGroup
	for _, ch := range children {
		wg.Go(func() { ch.Finish(10 * time.Second) })
	}
	wg.Wait()

	col.mu.Lock()
	defer col.mu.Unlock()
	for _, f := range col.fatal {
		t.Errorf("child: %s", f)
	}
	res.Dups, res.Shared = Check(t, col.recs)
	machines := make(map[int]bool)
	holders := make(map[int32]bool)
	for _, r := range col.recs {
		machines[snowfence.V1().Split(snowfence.ID(r.ID)).Machine] = true
		holders[r.Holder] = true
	}
	if col.disorder > 0 {
		t.Errorf("%d IDs not above their holder's previous one", col.disorder)
	}
	res.IDs, res.Holders, res.Machines, res.Disorder = len(col.recs), len(holders), len(machines), col.disorder
	res.Incarnations, res.Refused, res.NoClaim = col.incarnations, col.refused, col.noclaim
	res.Reports, res.Issued = col.reports, col.issued
	t.Logf("%s: %d IDs from %d holders, %d kills, %d duplicates, %d shared milliseconds (%d processes, %d pauses, %d machine numbers used, %d refused batches, %d failed claims)",
		s.Name, res.IDs, res.Holders, res.Kills, res.Dups, res.Shared, res.Incarnations, res.Pauses, res.Machines, res.Refused, res.NoClaim)
	if res.Holders < s.MinHolders || res.Kills == 0 || res.IDs < 1000 {
		t.Errorf("soak too thin to mean much: %d holders issued (want %d), %d kills, %d IDs (want 1000)", res.Holders, s.MinHolders, res.Kills, res.IDs)
	}
	return res
}
