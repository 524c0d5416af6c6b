package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/client"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/harness/chaos/etcdproc"
	"github.com/snowfence/snowfence/internal/testkit/freeport"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// Scenario 11, a lost region (docs/regions.md, "What losing a region
// costs"): two regions, each with an etcd cluster of its own (three member
// processes) and snowfence serve holders that know only that cluster, one
// region registry copied to both clusters and v2 (region bits) the fleet
// schedule. Application processes call through the Go client (package
// client), each one client.Client: most list region A's services first and
// region B's after, one lists B's first (region B's own callers). Under
// load, region A — its three etcd members and all its holders — is
// SIGKILLed at once; region A's callers must fail over to region B (the
// client's FailureThreshold) and lose no request. Then region A is started
// again on its data (members and holders on the same addresses), and its
// callers must come back to it (the client's recovery probes on /healthz).
// Every ID handed to a caller goes through the oracle, so an ID issued by
// both regions fails the row.

// regionPlan shapes scenario 11.
type regionPlan struct {
	holders  [2]int // snowfence serve processes of region A and region B
	machines string // every holder's --machines: the same range in both regions
	apps     [2]int // client.Client processes homed in region A and in region B
	callers  int    // goroutines calling each client
	rate     int    // IDs per second of every caller together
	count    int    // IDs per NextN
	// maxRequests bounds each caller's requests (the time bound is the
	// scenario's phases).
	maxRequests int
	timings     lease.Timings // every holder's, drawn (steady)
	steady      time.Duration // load before the loss, and on each side after
	held        time.Duration // region A kept down once every caller failed over
	within      time.Duration // the most failing over, or back, may take
}

// regionPlanFor is the short or the long mode's plan. The holders'
// timings and how many there are in each region are drawn; the range is
// the story's: the same in both regions, and inside the v2 layout's
// 0–511, which the drawer's ranges (v1's 0–1023) are not.
func regionPlanFor(e *Env) (regionPlan, error) {
	t, err := e.drawTimings(steadyBox)
	if err != nil {
		return regionPlan{}, err
	}
	return regionPlan{
		holders:  [2]int{e.count("region A holders", 2, 4), e.count("region B holders", 2, 3)},
		machines: e.fixedMachines("holders of both regions", "0-31"),
		apps:     [2]int{3, 1}, callers: 2,
		rate: scale(e, 20000, 40000), count: 10, maxRequests: 2_000_000, timings: t,
		steady: scale(e, 3*time.Second, 30*time.Second), held: scale(e, 3*time.Second, 30*time.Second),
		within: 30 * time.Second,
	}, nil
}

// regionSetup is how the scenario's regions are set up: as the regions
// docs prescribe, or (only to prove the suite catches it) wrongly.
type regionSetup int

const (
	// regionsApart: a registry names each region, its home its own store;
	// holders start with --region NAME, so the two regions' IDs differ by
	// their region bits.
	regionsApart regionSetup = iota
	// regionsShared: no registry, and every holder of both regions starts
	// with --region 0 (a number works as it is on a store without a
	// registry), region B's each on the machine number of one of region
	// A's. Both regions then hold the same machine numbers of region 0,
	// from two stores that know nothing of each other: their IDs repeat
	// whenever both mint in one millisecond, and the suite must say so.
	regionsShared
)

// chaosRegion is one region of scenario 11: its store and its holders.
type chaosRegion struct {
	name    string
	number  int // the registry's
	cluster *etcdproc.Cluster
	svcs    []*service
	addrs   []string // the holders' listen addresses, kept across restarts
}

// targets are the host:port client addresses of the region's members.
func (r *chaosRegion) targets() []string {
	var out []string
	for _, ep := range r.cluster.Endpoints() {
		out = append(out, strings.TrimPrefix(ep, "http://"))
	}
	return out
}

// regionLoss is scenario 11 as the regions docs set regions up.
func regionLoss(e *Env) error { return lostRegion(e, regionsApart) }

// lostRegion runs scenario 11 on regions set up as setup says.
func lostRegion(e *Env, setup regionSetup) error {
	plan, err := regionPlanFor(e)
	if err != nil {
		return err
	}
	regions, err := e.startRegions(setup, plan)
	if err != nil {
		return err
	}
	a, b := regions[0], regions[1]
	l, apps, err := e.startRegionApps(regions, plan)
	if err != nil {
		return err
	}
	defer func() {
		l.stop() // done already, unless the scenario ended early
		for _, app := range apps {
			app.c.Close()
		}
	}()
	homedA := slices.DeleteFunc(slices.Clone(apps), func(app *regionApp) bool { return app.home != 0 })
	homedB := slices.DeleteFunc(slices.Clone(apps), func(app *regionApp) bool { return app.home != 1 })
	handedA := func() (n int64) {
		for _, app := range homedA {
			n += app.handed()
		}
		return n
	}
	// The seed picks the instants of the loss and of the restart, within a
	// second of the plan's.
	if err := e.wait(plan.steady + time.Duration(e.rng.Int64N(int64(time.Second)))); err != nil {
		return err
	}
	var early []string
	for _, app := range homedA {
		if n := app.tr.ok[1].Load(); n > 0 || app.tr.ok[0].Load() == 0 {
			early = append(early, fmt.Sprintf("%s: %d answers from A, %d from B", app.name, app.tr.ok[0].Load(), n))
		}
	}
	e.check("before the loss, region A's callers were served by region A alone", len(early) == 0, "%s",
		orNone(early, fmt.Sprintf("%d clients, %s IDs handed out to them", len(homedA), thousands(handedA())), ""))

	// Region A lost: its members and its holders SIGKILLed at once.
	var wg sync.WaitGroup
	for i := range a.cluster.Size() {
		wg.Go(func() {
			if err := a.cluster.Kill(i); err != nil {
				e.fail("SIGKILL region A's etcd member %d: %v", i, err)
			}
		})
	}
	for _, s := range a.svcs {
		wg.Go(s.kill)
	}
	wg.Wait()
	lost := time.Now()
	idsAtLoss := handedA()
	e.logf("region %s lost: %d etcd members and %d holders SIGKILLed", a.name, a.cluster.Size(), len(a.svcs))

	over, late := waitSwitched(e, homedA, 1, lost, plan.within)
	e.check("region A's callers failed over to region B", len(late) == 0,
		"every region-A client took IDs from region B within %v of the loss (slowest %v)%s",
		plan.within, over.Round(time.Millisecond), orNone(late, "", ": "))
	e.recovered(over, "the slowest region-A client's first IDs from region B after the loss, callers' view")
	if err := e.wait(plan.held + time.Duration(e.rng.Int64N(int64(time.Second)))); err != nil {
		return err
	}
	idsDown := handedA() - idsAtLoss
	e.check("region A's callers kept getting IDs while region A was down", idsDown > 0, "%s IDs handed out to them in the %v region A was down",
		thousands(idsDown), time.Since(lost).Round(time.Millisecond))
	var strays []string
	for _, app := range homedA {
		if n := app.idsOfA(lost.Add(time.Second), time.Now()); n > 0 {
			strays = append(strays, fmt.Sprintf("%s: %d", app.name, n))
		}
	}
	e.check("the IDs handed out while region A was down carry region B's number", len(strays) == 0,
		"IDs decoding to region A's number %d handed out from 1 s (the client's MaxAge) after the loss: %s", a.number, orNone(strays, "none", ""))

	// Region A back: its members on their data, its holders on their
	// addresses.
	restart := time.Now()
	var restartErr [3]error
	for i := range a.cluster.Size() {
		wg.Go(func() { restartErr[i] = a.cluster.Restart(e.ctx, i) })
	}
	wg.Wait()
	for _, err := range restartErr {
		if err != nil {
			return fmt.Errorf("region A's etcd: %w", err)
		}
	}
	if err := a.cluster.WaitWritable(e.ctx); err != nil {
		return err
	}
	for _, s := range a.svcs {
		if err := s.start(); err != nil {
			return err
		}
	}
	if err := e.waitServices(a.svcs, 60*time.Second); err != nil {
		return err
	}
	issuing, err := e.waitAllIssuing(a.svcs, 60*time.Second)
	if err != nil {
		return err
	}
	e.note("region A down %v; restarted (etcd writable, every holder issuing) %v after the restart began",
		restart.Sub(lost).Round(time.Millisecond), issuing.Sub(restart).Round(time.Millisecond))

	back, late := waitSwitched(e, homedA, 0, issuing, plan.within)
	e.check("region A's callers came back to region A", len(late) == 0,
		"every region-A client took IDs from region A within %v of its holders issuing again (slowest %v, %v after the restart began)%s",
		plan.within, back.Round(time.Millisecond), (issuing.Sub(restart) + back).Round(time.Millisecond), orNone(late, "", ": "))
	e.recovered(back, "the slowest region-A client's first IDs from region A after its holders issued again, callers' view (recovery probes)")
	if err := e.wait(plan.steady); err != nil {
		return err
	}
	var away []string
	for _, app := range homedA {
		if st := app.c.Stats(); st.Endpoint < 0 || st.Endpoint >= len(a.svcs) {
			away = append(away, fmt.Sprintf("%s on endpoint %d", app.name, st.Endpoint))
		}
	}
	e.check("region A's callers stayed on region A", len(away) == 0, "%s", orNone(away, "every region-A client's first endpoint in service is region A's", ""))
	l.stop()
	var waited time.Duration
	for _, app := range homedA {
		waited = max(waited, time.Duration(app.longest.Load()))
	}
	e.note("the longest a region-A caller waited for one request (across the failover): %v", waited.Round(time.Millisecond))

	// Region B's own callers: never a refusal, never another region.
	var touched []string
	for _, app := range homedB {
		if f, r, o := app.tr.failed[1].Load(), app.tr.refused[1].Load(), app.tr.ok[0].Load(); f+r+o > 0 {
			touched = append(touched, fmt.Sprintf("%s: %d failed and %d refused attempts on B, %d answers from A", app.name, f, r, o))
		}
	}
	e.check("region B's own callers never noticed", len(touched) == 0, "%s", orNone(touched, "no failed or refused attempt, every answer from region B", ""))

	for _, app := range apps {
		st := app.c.Stats()
		e.note("%s (home %s): %s answers from A, %s from B; %d refused and %d failed attempts; %s IDs by region number %v; %d calls failed and were retried; the longest wait for one request %v; client stats: %d requests, %d failures, %d IDs expired",
			app.name, regions[app.home].name, thousands(app.tr.ok[0].Load()), thousands(app.tr.ok[1].Load()),
			app.tr.refused[0].Load()+app.tr.refused[1].Load(), app.tr.failed[0].Load()+app.tr.failed[1].Load(),
			thousands(app.handed()), app.byNumber(), app.errs.Load(), time.Duration(app.longest.Load()).Round(time.Millisecond), st.Requests, st.Failures, st.Expired)
		if n := app.errs.Load(); n > 0 {
			e.note("%s: the last failed call: %v", app.name, app.lastErr.Load())
		}
	}
	e.note("region %s is number %d, region %s number %d; the oracle's sources are the clients (app-a0 0, …, in this order), a lane caller·1,000,000 + (region number + 1)·1,000 + machine number", a.name, a.number, b.name, b.number)
	return nil
}

// orNone is the items joined after lead, or none when there are none.
func orNone(items []string, none, lead string) string {
	if len(items) == 0 {
		return none
	}
	return lead + strings.Join(items, "; ")
}

// startRegions starts region B's etcd cluster beside region A's (the
// scenario's own), makes v2 the fleet schedule of both, registers the two
// regions and starts their holders.
func (e *Env) startRegions(setup regionSetup, plan regionPlan) ([2]*chaosRegion, error) {
	regions := [2]*chaosRegion{{name: "region-a", cluster: e.cluster}, {name: "region-b"}}
	var err error
	regions[1].cluster, err = etcdproc.Start(e.ctx, etcdproc.Config{
		Dir:     filepath.Join(e.dir, "etcd-b"),
		Size:    3,
		Command: func(args ...string) *exec.Cmd { return e.opts.Command(RoleEtcdMember, args...) },
		Stderr:  &prefixWriter{w: e.opts.Log, prefix: "s" + e.id + " etcd-b: "},
	})
	if err != nil {
		return regions, fmt.Errorf("region B's etcd cluster: %w", err)
	}
	e.cleanups = append(e.cleanups, func() { regions[1].cluster.Close() })
	for _, r := range regions {
		if err := setFleetSchedule(e.ctx, r.cluster.Endpoints(), "v2"); err != nil {
			return regions, fmt.Errorf("%s: %w", r.name, err)
		}
	}
	if setup == regionsApart {
		if err := e.registerRegions(regions); err != nil {
			return regions, err
		}
	}
	for i, r := range regions {
		region := r.name
		if setup == regionsShared {
			region = "0"
			if i == 1 { // region B's holders on region A's holders' numbers
				if err := e.waitServices(regions[0].svcs, 60*time.Second); err != nil {
					return regions, err
				}
			}
		}
		for k := range plan.holders[i] {
			// A fixed address: its clients' endpoints name it, so a holder
			// started again after the loss listens on it again.
			ports, err := freeport.Loopback(1)
			if err != nil {
				return regions, err
			}
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
			machines := plan.machines
			if setup == regionsShared && i == 1 {
				m := regions[0].svcs[k%len(regions[0].svcs)].machine.Load()
				machines = fmt.Sprintf("%d-%d", m, m)
			}
			s, err := e.addService(serviceConfig{machines: machines, storeAddrs: r.targets(), listen: addr,
				args: []string{"--schedule", "v2", "--region", region}}.timed(plan.timings))
			if err != nil {
				return regions, err
			}
			r.svcs, r.addrs = append(r.svcs, s), append(r.addrs, addr)
		}
	}
	all := append(slices.Clone(regions[0].svcs), regions[1].svcs...)
	if err := e.waitServices(all, 60*time.Second); err != nil {
		return regions, err
	}
	if _, err := e.waitAllIssuing(all, 60*time.Second); err != nil {
		return regions, err
	}
	for _, r := range regions {
		var ms []string
		for _, s := range r.svcs {
			ms = append(ms, fmt.Sprintf("%s machine %d", s.name, s.machine.Load()))
		}
		e.logf("%s (number %d): %s", r.name, r.number, strings.Join(ms, ", "))
	}
	return regions, nil
}

// setFleetSchedule makes text the fleet schedule of a fresh store. snowfence
// schedule set cannot: it wants an hour's notice for any change, and v2
// from the epoch differs from the default v1 at once; a new fleet is set up
// through the store before any holder starts, as cmd/snowfence's
// multi-region tests do.
func setFleetSchedule(ctx context.Context, endpoints []string, text string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: endpoints}, etcdstore.Config{})
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.SetFleetSchedule(ctx, 0, text); err != nil {
		return fmt.Errorf("set the fleet schedule %s: %w", text, err)
	}
	return nil
}

// registerRegions writes the region registry to both clusters with the
// operator's commands: snowfence regions add NAME --create (the first)
// --home COPY, copy 1 region A's cluster (the store flags) and copy 2
// region B's (--copy), each region's home its own.
func (e *Env) registerRegions(regions [2]*chaosRegion) error {
	copy2 := "etcd://" + strings.Join(regions[1].targets(), ",") + etcdstore.DefaultPrefix
	for i, r := range regions {
		args := []string{"regions", "add", r.name, "--json", "--home", fmt.Sprint(i + 1), "--copy", copy2}
		if i == 0 {
			args = append(args, "--create")
		}
		out, err := e.snowfence(append(args, e.serveStoreArgs(regions[0].targets())...)...)
		if err != nil {
			return err
		}
		var g registry.Region
		if err := json.Unmarshal(out, &g); err != nil || g.Name != r.name {
			return fmt.Errorf("regions add %s --json: %q (%v)", r.name, out, err)
		}
		r.number = g.Number
	}
	if regions[0].number == regions[1].number {
		return fmt.Errorf("the registry gave both regions number %d", regions[0].number)
	}
	return nil
}

// snowfence runs the snowfence binary with args and returns its stdout.
func (e *Env) snowfence(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.opts.Snowfence, args...)
	cmd.Env = append(cmd.Environ(), e.storeEnv()...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("snowfence %s: %v: %s", strings.Join(args[:min(2, len(args))], " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// regionApp is one application process of scenario 11: a client.Client
// whose endpoints are its home region's holders, then the other region's,
// and the callers on it.
type regionApp struct {
	name string
	idx  int // the oracle's source number
	home int // index of its home region
	c    *client.Client
	tr   *mintCounter

	errs    atomic.Int64 // calls that failed (and were retried)
	lastErr atomic.Value // string
	longest atomic.Int64 // the longest a caller waited for one request, ns

	mu      sync.Mutex
	numbers map[int]int64 // IDs handed out by region number
	regions map[int]int   // region number → region index
	spans   []regionSpan  // IDs handed out of region A's number, by when
}

// regionSpan counts the IDs of region A's number handed out by one call.
type regionSpan struct {
	at time.Time
	n  int
}

// startRegionApps starts the application processes and their callers as
// one load, whose counters go into the row: requests, refused (503) and
// failed attempts (counted on each client's transport), lost requests.
func (e *Env) startRegionApps(regions [2]*chaosRegion, plan regionPlan) (*load, []*regionApp, error) {
	cfg := loadConfig{callers: (plan.apps[0] + plan.apps[1]) * plan.callers, rate: plan.rate, count: plan.count, deadline: 90 * time.Second}
	ctx, cancel := context.WithCancel(e.ctx)
	l := &load{env: e, cfg: cfg, cancel: cancel, started: time.Now()}
	e.loads = append(e.loads, l)
	numbers := map[int]int{regions[0].number: 0}
	if regions[1].number != regions[0].number {
		numbers[regions[1].number] = 1
	}
	var apps []*regionApp
	for home := range 2 {
		for k := range plan.apps[home] {
			app, err := newRegionApp(fmt.Sprintf("app-%c%d", 'a'+home, k), home, regions, numbers, l)
			if err == nil {
				app.idx = len(apps)
			}
			if err != nil {
				l.stop()
				return nil, nil, err
			}
			apps = append(apps, app)
		}
	}
	every := time.Duration(float64(time.Second) * float64(cfg.count*cfg.callers) / float64(cfg.rate))
	for i, app := range apps {
		for j := range plan.callers {
			caller := int32(i*plan.callers + j)
			l.wg.Go(func() { app.caller(ctx, l, caller, every, plan.maxRequests) })
		}
	}
	return l, apps, nil
}

// newRegionApp makes a client on regions' holders, its home region's
// first.
func newRegionApp(name string, home int, regions [2]*chaosRegion, numbers map[int]int, l *load) (*regionApp, error) {
	tr := &mintCounter{base: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}, region: map[string]int{}, load: l}
	var endpoints []string
	for _, r := range []*chaosRegion{regions[home], regions[1-home]} {
		for _, addr := range r.addrs {
			endpoints = append(endpoints, "http://"+addr)
			tr.region[addr] = slices.Index(regions[:], r)
		}
	}
	// No Schedule: the client then hands out every ID a server answered,
	// and the oracle, not the client, judges whether one repeats.
	c, err := client.New(client.Config{
		Endpoints:        endpoints,
		HTTPClient:       &http.Client{Transport: tr},
		RequestTimeout:   time.Second,
		MaxBuffer:        200, // small refills: many requests, so the regions' mints meet in the same milliseconds
		RefillPeriod:     50 * time.Millisecond,
		FailureThreshold: 3,
		RecoveryProbes:   3,
		ProbeInterval:    100 * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	return &regionApp{name: name, home: home, c: c, tr: tr, numbers: map[int]int64{}, regions: numbers}, nil
}

// caller takes IDs at its share of the rate until ctx ends or it has made
// maxRequests requests.
func (app *regionApp) caller(ctx context.Context, l *load, caller int32, every time.Duration, maxRequests int) {
	next := time.Now()
	for range maxRequests {
		if ctx.Err() != nil {
			return
		}
		var err error
		if next, err = paced(ctx, next, every); err != nil {
			return
		}
		app.request(ctx, l, caller)
	}
}

// request is one caller request: NextN, called again after a failure (the
// client gave up after its MaxAttempts) until IDs come or the deadline
// passes. A request that started is seen through after stop.
func (app *regionApp) request(stopCtx context.Context, l *load, caller int32) {
	l.requests.Add(1)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(stopCtx), l.cfg.deadline)
	defer cancel()
	start := time.Now()
	for {
		ids, err := app.c.NextN(ctx, l.cfg.count)
		if err == nil {
			for d := int64(time.Since(start)); ; {
				if old := app.longest.Load(); d <= old || app.longest.CompareAndSwap(old, d) {
					break
				}
			}
			app.took(l.env, caller, ids)
			l.ids.Add(int64(len(ids)))
			return
		}
		if ctx.Err() != nil || errors.Is(err, client.ErrClosed) {
			l.lost.Add(1)
			l.env.logf("%s caller %d: request lost after %v: %v", app.name, caller, l.cfg.deadline, err)
			return
		}
		app.errs.Add(1)
		app.lastErr.Store(err.Error())
		pause(ctx, 5*time.Millisecond)
	}
}

// took records the IDs handed to a caller in the collector: the source is
// the application process, so that a duplicate names the two that got it;
// each run of one (region, machine) is the lane of that machine number and
// this caller, which must increase (the client hands out IDs in the order
// they came, and one machine number's IDs increase across its holders).
func (app *regionApp) took(e *Env, caller int32, ids []snowfence.ID) {
	v2 := snowfence.V2()
	buf := make([]int64, len(ids))
	lanes := make([]int32, len(ids))
	ofA := 0
	app.mu.Lock()
	for i, id := range ids {
		buf[i] = int64(id)
		f := v2.Split(id)
		lanes[i] = regionLane(caller, f)
		app.numbers[f.Region]++
		if r, ok := app.regions[f.Region]; ok && r == 0 {
			ofA++
		}
	}
	if ofA > 0 {
		app.spans = append(app.spans, regionSpan{at: time.Now(), n: ofA})
	}
	app.mu.Unlock()
	for i := 0; i < len(buf); {
		j := i + 1
		for j < len(buf) && lanes[j] == lanes[i] {
			j++
		}
		e.col.record(int32(app.idx), lanes[i], buf[i:j], 0)
		i = j
	}
}

// regionLane is the collector's lane of a caller's IDs of one (region,
// machine): caller·1,000,000 + (region + 1)·1,000 + machine.
func regionLane(caller int32, f snowfence.Fields) int32 {
	return caller*1_000_000 + int32((f.Region+1)*1000+f.Machine)
}

// idsOfA counts the IDs of region A's number handed out in [from, to).
func (app *regionApp) idsOfA(from, to time.Time) int {
	app.mu.Lock()
	defer app.mu.Unlock()
	n := 0
	for _, s := range app.spans {
		if !s.at.Before(from) && s.at.Before(to) {
			n += s.n
		}
	}
	return n
}

// handed is the number of IDs handed out.
func (app *regionApp) handed() int64 {
	app.mu.Lock()
	defer app.mu.Unlock()
	var n int64
	for _, v := range app.numbers {
		n += v
	}
	return n
}

// byNumber is the IDs handed out by region number.
func (app *regionApp) byNumber() map[int]int64 {
	app.mu.Lock()
	defer app.mu.Unlock()
	return maps.Clone(app.numbers)
}

// waitSwitched waits until every app's client took IDs from region
// (index) after since, at most within, and returns the slowest one's time
// and the apps that did not.
func waitSwitched(e *Env, apps []*regionApp, region int, since time.Time, within time.Duration) (time.Duration, []string) {
	var slowest time.Duration
	var late []string
	for _, app := range apps {
		at, ok := app.tr.firstAnswer(e.ctx, region, since, since.Add(within))
		if !ok {
			late = append(late, fmt.Sprintf("%s none within %v (client stats %+v)", app.name, within, app.c.Stats()))
			continue
		}
		slowest = max(slowest, at.Sub(since))
	}
	return slowest, late
}

// mintCounter is a client's transport: it counts the client's mint
// requests by the region of the endpoint and by outcome (200, 503 refused,
// no answer or another status: failed; the row counts the last two), and
// keeps when its 200s changed region: the callers' view of failing over
// and back.
type mintCounter struct {
	base   http.RoundTripper
	region map[string]int // endpoint host:port → region index
	load   *load

	ok, refused, failed [2]atomic.Int64

	mu       sync.Mutex
	cur      int // region of the last 200; -1 before the first
	switches []regionSwitch
	changed  chan struct{} // closed and replaced at each switch
}

// regionSwitch is the first 200 from another region than the last one.
type regionSwitch struct {
	at     time.Time
	region int
}

// RoundTrip sends req and counts its outcome.
func (m *mintCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.base.RoundTrip(req)
	if req.Method != http.MethodPost {
		return resp, err // a probe of /healthz
	}
	r := m.region[req.URL.Host]
	switch {
	case err == nil && resp.StatusCode == http.StatusOK:
		m.ok[r].Add(1)
		m.answered(r)
	case err == nil && resp.StatusCode == http.StatusServiceUnavailable:
		m.refused[r].Add(1)
		m.load.refused.Add(1)
	default:
		m.failed[r].Add(1)
		m.load.failed.Add(1)
	}
	return resp, err
}

// answered notes a 200 from region r.
func (m *mintCounter) answered(r int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.changed == nil {
		m.cur, m.changed = -1, make(chan struct{})
	}
	if r == m.cur {
		return
	}
	m.cur = r
	m.switches = append(m.switches, regionSwitch{at: time.Now(), region: r})
	close(m.changed)
	m.changed = make(chan struct{})
}

// firstAnswer waits until the client has had a 200 from region r after
// since (or already was on r then: since itself), until deadline.
func (m *mintCounter) firstAnswer(ctx context.Context, r int, since, deadline time.Time) (time.Time, bool) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		m.mu.Lock()
		if m.changed == nil {
			m.cur, m.changed = -1, make(chan struct{})
		}
		on, at := -1, time.Time{}
		for _, s := range m.switches {
			if s.at.Before(since) {
				on = s.region
			} else if s.region == r && at.IsZero() {
				at = s.at
			}
		}
		changed := m.changed
		m.mu.Unlock()
		switch {
		case on == r:
			return since, true
		case !at.IsZero():
			return at, true
		}
		select {
		case <-changed:
		case <-t.C:
			return time.Time{}, false
		case <-ctx.Done():
			return time.Time{}, false
		}
	}
}
