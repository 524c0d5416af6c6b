//go:build linux

package pgstore_test

import (
	"bufio"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// soakProc is a running child process, seen from the parent.
type soakProc struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	readDone chan struct{}
	waitOnce sync.Once
}

// reap waits up to d for the child's output to end, then for the process;
// it reports whether the output ended in time.
func (p *soakProc) reap(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.readDone:
	case <-t.C:
		return false
	}
	p.waitOnce.Do(func() { p.cmd.Wait() })
	return true
}

// kill SIGKILLs the child (if it still runs) and reaps it.
func (p *soakProc) kill() {
	p.cmd.Process.Kill()
	if !p.reap(10 * time.Second) {
		p.waitOnce.Do(func() { p.cmd.Wait() })
	}
}

// finish closes the child's stdin, which makes it release its numbers and
// exit, and waits up to d for that before killing it.
func (p *soakProc) finish(d time.Duration) {
	p.stdin.Close()
	if !p.reap(d) {
		p.kill()
	}
}

// TestSoakKilledHoldersNeverDuplicate runs 8 child processes, one Keeper and
// generator each, on machine numbers 0–5 of one table (so two holders are
// always waiting for a number), minting continuously, while the parent
// SIGKILLs a random process every 0.3–1.5 s and starts a fresh one in its
// place; a killed holder's number comes free when its lease (3 s) runs out.
// Every ID a child printed counts (a killed child's unprinted IDs never left
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
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SNOWFENCE_SOAK_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SNOWFENCE_SOAK_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("pgstore soak: seed %d (SNOWFENCE_SOAK_SEED=%d replays the kill schedule), %v", seed, seed, dur)
	prng := rand.New(rand.NewPCG(seed, 0))

	pool := testPool(t, 4)
	table := newTable(t, pool)
	openStore(t, pool, table) // creates the table
	cfg := soakConfig{URL: url, Table: table, Range: rng, Holders: perProc, Batch: 10, Every: 10 * time.Millisecond,
		Lifetime: dur + 30*time.Second, LeaseFor: 3 * time.Second, RenewEvery: 500 * time.Millisecond, SelfFence: 2 * time.Second}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	type rec struct {
		id     int64
		holder int32
	}
	type reqs struct{ stmts, calls, extends, ms int64 }
	var (
		mu                         sync.Mutex
		recs                       []rec
		refused, noclaim, disorder int
		fatal                      []string
		report                     = map[int]reqs{} // incarnation → its last report
		issued                     = map[int]bool{} // incarnations that issued
		incarnations               int
	)
	start := func() *soakProc {
		mu.Lock()
		inc := incarnations
		incarnations++
		mu.Unlock()
		cmd := exec.Command(exe, "-test.run=^TestSoakChild$", "-test.count=1",
			"-test.timeout="+(cfg.Lifetime+30*time.Second).String())
		cmd.Env = append(os.Environ(), soakChildEnv+"="+string(js))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		p := &soakProc{cmd: cmd, readDone: make(chan struct{})}
		var err error
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.kill)
		last := map[int]int64{} // per holder index; only this reader uses it
		go func() {
			defer close(p.readDone)
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				kind, rest, _ := strings.Cut(line, " ")
				f := strings.Fields(rest)
				if len(f) == 0 {
					continue
				}
				switch kind {
				case "ids":
					idx, err := strconv.Atoi(f[0])
					if err != nil {
						t.Errorf("child line %q: %v", line, err)
						continue
					}
					batch := make([]rec, 0, len(f)-1)
					dis := 0
					for _, s := range f[1:] {
						id, err := strconv.ParseInt(s, 10, 64)
						if err != nil {
							t.Errorf("child line %q: %v", line, err)
							break
						}
						if id <= last[idx] {
							dis++
						}
						last[idx] = id
						batch = append(batch, rec{id, int32(inc*perProc + idx)})
					}
					mu.Lock()
					recs = append(recs, batch...)
					disorder += dis
					issued[inc] = true
					mu.Unlock()
				case "reqs":
					var r reqs
					if len(f) == 4 {
						r.stmts, _ = strconv.ParseInt(f[0], 10, 64)
						r.calls, _ = strconv.ParseInt(f[1], 10, 64)
						r.extends, _ = strconv.ParseInt(f[2], 10, 64)
						r.ms, _ = strconv.ParseInt(f[3], 10, 64)
					}
					mu.Lock()
					report[inc] = r
					mu.Unlock()
				case "refused":
					mu.Lock()
					refused++
					mu.Unlock()
				case "noclaim":
					mu.Lock()
					noclaim++
					mu.Unlock()
				case "fatal":
					mu.Lock()
					fatal = append(fatal, rest)
					mu.Unlock()
				}
			}
		}()
		return p
	}
	children := make([]*soakProc, procs)
	for i := range children {
		children[i] = start()
	}
	kills := 0
	deadline := time.Now().Add(dur)
	for range 10000 {
		gap := 300*time.Millisecond + time.Duration(prng.Int64N(int64(1200*time.Millisecond)))
		if time.Now().Add(gap).After(deadline) {
			break
		}
		time.Sleep(gap) // the kill schedule, not synchronisation
		i := prng.IntN(procs)
		children[i].kill()
		kills++
		children[i] = start()
	}
	time.Sleep(time.Until(deadline))
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Go(func() { c.finish(10 * time.Second) })
	}
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(recs, func(a, b rec) int {
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
	holders := map[int32]bool{}
	machines := map[int]bool{}
	for _, r := range recs {
		holders[r.holder] = true
		machines[snowfence.V1().Split(snowfence.ID(r.id)).Machine] = true
	}
	for _, f := range fatal {
		t.Errorf("child: %s", f)
	}
	if disorder > 0 {
		t.Errorf("%d IDs not above their holder's previous one", disorder)
	}
	// Requests per second of holder life: over every incarnation, and apart
	// for those that held a number at some point and those that only waited.
	var all, held reqs
	for inc, r := range report {
		all.stmts, all.calls, all.extends, all.ms = all.stmts+r.stmts, all.calls+r.calls, all.extends+r.extends, all.ms+r.ms
		if issued[inc] {
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
	t.Logf("pgstore soak: %d IDs from %d holders, %d kills, %d duplicates, %.1f store requests/s per holder",
		len(recs), len(holders), kills, dups, rate(all.stmts, all.ms))
	t.Logf("pgstore soak: %d processes, %d machine numbers used, %d shared milliseconds, %d refused batches, %d failed claims; "+
		"%d SQL statements for %d lease.Store calls in %.1f holder-seconds (lease 3 s, renewal every 0.5 s): "+
		"%.1f statements/s (%.1f calls, %.1f renewals) per holder that held a number, %.1f statements/s (%.1f calls) per holder that only waited",
		incarnations, len(machines), shared, refused, noclaim, all.stmts, all.calls, float64(all.ms)/1000,
		rate(held.stmts, held.ms), rate(held.calls, held.ms), rate(held.extends, held.ms), rate(waited.stmts, waited.ms), rate(waited.calls, waited.ms))
	if dups != 0 || shared != 0 {
		t.Errorf("%d duplicate IDs, %d milliseconds stamped by two holders on one number", dups, shared)
	}
	if kills == 0 || len(recs) < 1000 || len(holders) < rng.Hi-rng.Lo+1 {
		t.Errorf("soak too thin to mean much: %d kills, %d IDs, %d holders issued", kills, len(recs), len(holders))
	}
}
