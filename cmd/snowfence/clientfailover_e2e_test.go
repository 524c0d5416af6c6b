//go:build linux

package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/client"
	"github.com/snowfence/snowfence/internal/testkit/idtable"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"golang.org/x/time/rate"
)

// failoverPlan bounds the client failover test.
type failoverPlan struct {
	callers  int           // goroutines calling the client
	perCall  int           // IDs per NextN (1 means Next)
	maxIDs   int           // per goroutine: the count bound
	rate     int           // per goroutine: IDs a second, so that the count bound outlasts every phase
	phase    time.Duration // each phase's time bound
	backWait time.Duration // the most the client may take to return to the primary
}

// At 25,000 IDs a second a caller reaches its count bound after 80 s; the
// phases and the primary's restart (its first grant waits out the store's
// notice window) take well under that. Unpaced, callers served from the
// client's buffer reached the bound while the primary restarted, and the
// test then saw no IDs from it after its return.
var clientFailoverPlan = failoverPlan{callers: 4, perCall: 3, maxIDs: 2_000_000, rate: 25_000, phase: 1500 * time.Millisecond, backWait: 15 * time.Second}

// TestE2EClientFailover: the Go client on two regions, each a snowfence
// serve on an etcd of its own. Under load, the primary region's serve is
// SIGKILLed: the client moves to the backup and its callers see no error.
// The primary is started again: the client returns to it after its health
// probes pass. Every ID the client handed out was issued by one of the two
// servers in a 200 (an ID tap in front of each records them), and a
// PostgreSQL primary key over the handed-out IDs finds no duplicate.
func TestE2EClientFailover(t *testing.T) {
	t.Parallel()
	pgURL := testenv.PostgresURL(t)
	plan := clientFailoverPlan
	bin := binary(t)
	regions := newRegions(t, []string{"eu-west-1", "us-east-1"})
	primary, backup := regions[0], regions[1]
	startHolder := func(r *mrRegion, name string) *mrHolder {
		h := &mrHolder{name: name, region: r}
		h.start(t, bin, "--etcd-endpoints", r.url, "--schedule", "v2", "--region", r.name, "--machines", "0-3")
		waitIssuing(t, &service{url: h.url})
		return h
	}
	a, b := startHolder(primary, "eu-west-1/a"), startHolder(backup, "us-east-1/a")
	tapA, tapB := startIDTap(t, "primary", a.url), startIDTap(t, "backup", b.url)

	// The client checks every answer against the schedule: no answer may
	// repeat IDs of a (layout, region, machine) it has seen.
	sched, err := snowfence.ParseSchedule("v2")
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{
		Endpoints:        []string{tapA.URL(), tapB.URL()},
		Schedule:         &sched,
		ProbeInterval:    50 * time.Millisecond,
		RecoveryProbes:   3,
		FailureThreshold: 3,
		MaxAttempts:      20,
		RequestTimeout:   2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()

	// The callers: each takes IDs until stop or its count bound.
	var mu sync.Mutex
	var handed []snowfence.ID
	var errs []error
	byRegion := map[int]int{}
	bounded := 0 // callers that stopped at a bound before the test stopped them
	stop := make(chan struct{})
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range plan.callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pace := rate.NewLimiter(rate.Limit(plan.rate), plan.perCall)
			var mine []snowfence.ID
			for len(mine) < plan.maxIDs {
				if pace.WaitN(ctx, plan.perCall) != nil {
					break // the test's time bound
				}
				select {
				case <-stop:
					mu.Lock()
					handed = append(handed, mine...)
					mu.Unlock()
					return
				default:
				}
				ids, err := c.NextN(ctx, plan.perCall)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				mine = append(mine, ids...)
				if d, err := sched.Decode(ids[0]); err == nil {
					mu.Lock()
					byRegion[d.RegionNumber] += len(ids)
					mu.Unlock()
				}
			}
			mu.Lock()
			handed = append(handed, mine...)
			bounded++
			mu.Unlock()
		}()
	}
	fromRegion := func(r *mrRegion) int {
		mu.Lock()
		defer mu.Unlock()
		return byRegion[r.number]
	}
	pause := func(d time.Duration) { <-time.After(d) } // a phase of load, not synchronisation

	pause(plan.phase)
	if fromRegion(primary) == 0 {
		t.Fatalf("no IDs from the primary region %s in the first phase", primary.name)
	}
	beforeKill := fromRegion(backup)
	if err := a.p.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	pause(plan.phase)
	if fromRegion(backup) == beforeKill {
		t.Fatalf("the client took no IDs from the backup region %s in the %s after the primary was SIGKILLed", backup.name, plan.phase)
	}
	t.Logf("primary SIGKILLed; %d IDs from the backup within %s", fromRegion(backup)-beforeKill, time.Since(killedAt).Round(time.Millisecond))

	// The primary again: a new serve on the same store.
	a2 := startHolder(primary, "eu-west-1/b")
	tapA.point(a2.url)
	restarted := time.Now()
	for c.Stats().Endpoint != 0 {
		if time.Since(restarted) > plan.backWait {
			t.Fatalf("the client did not return to the primary within %s of its restart: %+v", plan.backWait, c.Stats())
		}
		pause(10 * time.Millisecond) // polling interval
	}
	back := time.Since(restarted)
	atReturn := fromRegion(primary)
	pause(plan.phase)
	if fromRegion(primary) == atReturn {
		t.Errorf("the client returned to the primary but took no IDs from it in %s", plan.phase)
	}
	close(stop)
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed = true
	st := c.Stats()
	t.Logf("back on the primary %s after its restart; client stats %+v; %d IDs by region %v", back.Round(time.Millisecond), st, len(handed), byRegion)
	for i, err := range errs {
		if i < 5 {
			t.Errorf("a caller got an error: %v", err)
		}
	}
	if len(errs) > 0 {
		t.Errorf("%d client calls failed across the failover and back", len(errs))
	}
	if bounded > 0 {
		t.Errorf("%d callers stopped at their count or time bound before the phases ended: the load did not span the test (raise maxIDs or lower the rate)", bounded)
	}
	for _, err := range errs {
		if errors.Is(err, client.ErrClosed) {
			t.Errorf("a caller saw the client closed before stop")
			break
		}
	}

	// Never twice, never invented.
	issued := append(tapA.issued(), tapB.issued()...)
	if n := idtable.PrimaryKeyDuplicates(t, pgURL, handed); n != 0 {
		t.Errorf("the PostgreSQL primary key found %d duplicates among the %d IDs the client handed out", n, len(handed))
	}
	if n := idtable.NotIn(t, pgURL, handed, issued); n != 0 {
		t.Errorf("%d of the %d IDs the client handed out were never issued by either server", n, len(handed))
	}
	okA, cutA := tapA.counts()
	okB, cutB := tapB.counts()
	t.Logf("primary tap: %d 200s, %d connections cut; backup tap: %d 200s, %d cut; %d IDs issued, %d handed out", okA, cutA, okB, cutB, len(issued), len(handed))
	if err := b.p.Stop(15 * time.Second); err != nil {
		t.Errorf("stop the backup: %v", err)
	}
	if err := a2.p.Stop(15 * time.Second); err != nil {
		t.Errorf("stop the restarted primary: %v", err)
	}
}
