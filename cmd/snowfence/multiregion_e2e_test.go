//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/internal/testkit/idtable"
	"github.com/snowfence/snowfence/internal/testkit/spawn"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/lease/registry"
)

// The multi-region test runs what a fleet of three regions is: each region
// an etcd of its own (Debian's etcd, a process each) and two snowfence
// serve processes that know only that etcd, one region registry copied to
// every etcd. It loads all six, SIGKILLs one region's etcd and holders, and
// loads the other two regions on.

// mrRegion is one region of the test: its store and its holders.
type mrRegion struct {
	name    string
	number  int // the registry's
	etcd    *etcdtest.Binary
	url     string // etcd's client URL, for the test's reads of /metrics
	proxy   *storeProxy
	before  map[string]float64 // etcd's grpc_server_started_total at the start
	holders []*mrHolder
}

// mrHolder is one snowfence serve of a region, and what it acknowledged.
type mrHolder struct {
	name   string // "us-east-1/a"
	region *mrRegion
	p      *spawn.Proc
	url    string

	// From its own /metrics.
	holderID string
	machine  int

	mu        sync.Mutex
	ids       []snowfence.ID
	requests  int
	afterKill int      // requests acknowledged after the region was killed
	bad       []string // non-2xx answers and transport errors the test did not cause
}

// mrPlan is what the test runs; the zero-refusal and no-duplicate checks
// hold for any plan in which each holder is given its own region's store.
type mrPlan struct {
	names       []string
	holders     int           // per region
	machines    string        // --machines of every holder: few, so regions share machine numbers
	clients     int           // concurrent clients per holder
	batch       int           // IDs per POST
	maxRequests int           // per client and phase: the count bound
	phase       time.Duration // the time bound of each phase
	killed      int           // the region SIGKILLed between the phases
}

var multiRegionPlan = mrPlan{
	names:       []string{"us-east-1", "eu-west-1", "ap-south-1"},
	holders:     2,
	machines:    "0-3",
	clients:     2,
	batch:       100,
	maxRequests: 2000,
	phase:       2 * time.Second,
	killed:      2,
}

// TestE2EMultiRegion: three regions, each with its own etcd and two
// holders, one registry. While all six are loaded, region 3's etcd and
// holders are SIGKILLed; regions 1 and 2 go on issuing without one refusal
// or transport error. Every acknowledged ID decodes to the registry's
// number for the region of the holder that served it, and to that holder's
// machine (distinct within a region); a PostgreSQL primary key over all of
// them finds no duplicate. Each etcd's own count of the gRPC calls it
// started equals, method by method, what the counting proxy in front of it
// saw, and the proxy saw only that region's holders (and the test's own
// reads): no holder called another region's store.
func TestE2EMultiRegion(t *testing.T) {
	t.Parallel()
	heavy(t)
	began := time.Now()
	pgURL := testenv.PostgresURL(t)
	plan := multiRegionPlan
	bin := binary(t)

	regions := newRegions(t, plan.names)

	// From here on the test calls no store but through the proxies, so that
	// every call each etcd starts is one its proxy saw.
	for _, r := range regions {
		r.proxy = startStoreProxy(t, r.name, strings.TrimPrefix(r.url, "http://"))
		r.before, _ = grpcStarted(t, r.url)
	}
	for _, r := range regions {
		for i := range plan.holders {
			h := &mrHolder{name: fmt.Sprintf("%s/%c", r.name, 'a'+i), region: r}
			h.start(t, bin, "--etcd-endpoints", r.proxy.URL(), "--schedule", "v2", "--region", r.name, "--machines", plan.machines)
			r.holders = append(r.holders, h)
		}
	}
	var holders []*mrHolder
	for _, r := range regions {
		for _, h := range r.holders {
			waitIssuing(t, &service{url: h.url})
			h.readMetrics(t, true)
			holders = append(holders, h)
		}
	}
	ready := time.Now()
	checkMachines(t, regions)
	checkLeaseRecords(t, regions)

	// Load all six; SIGKILL the region; load the others on.
	killed := regions[plan.killed]
	killing := make(chan struct{})
	stop := make(chan struct{})
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: plan.clients}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	for _, h := range holders {
		for range plan.clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.load(client, plan, h.region == killed, killing, stop)
			}()
		}
	}
	phaseA := time.NewTimer(plan.phase)
	<-phaseA.C
	close(killing)
	killedAt := time.Now()
	for _, h := range killed.holders {
		if err := h.p.Kill(); err != nil {
			t.Fatalf("SIGKILL %s: %v", h.name, err)
		}
	}
	killed.proxy.waitIdle(t, 5*time.Second)
	killedCalls := killed.settle(t, 2*len(killed.holders)) // etcd is still there to count; calls in flight at the kill may never reach it
	if err := killed.etcd.Kill(); err != nil {
		t.Fatalf("SIGKILL the etcd of %s: %v", killed.name, err)
	}
	t.Logf("%s: SIGKILLed its two holders and its etcd %s after the load began", killed.name, killedAt.Sub(ready).Round(time.Millisecond))
	phaseB := time.NewTimer(plan.phase)
	<-phaseB.C
	close(stop)
	wg.Wait()
	loadEnded := time.Now()

	// The survivors: no refusal, no lost lease, then a clean stop.
	for _, h := range holders {
		if h.region != killed {
			h.readMetrics(t, false)
		}
	}
	spotCheckDecode(t, regions, killed)
	for _, r := range regions {
		if r == killed {
			continue
		}
		for _, h := range r.holders {
			if err := h.p.Stop(15 * time.Second); err != nil {
				t.Errorf("%s: SIGTERM: %v", h.name, err)
			}
		}
	}

	// Who called which store.
	storeLines := map[*mrRegion][]string{killed: killedCalls}
	for _, r := range regions {
		if r != killed {
			r.proxy.waitIdle(t, 5*time.Second)
			storeLines[r] = r.settle(t, 0)
		}
	}
	for _, r := range regions {
		checkCallers(t, r, regions)
		t.Logf("store of %s (region %d): %s", r.name, r.number, strings.Join(storeLines[r], "; "))
	}

	// Every acknowledged ID: its region, its holder's machine, once.
	sched, err := snowfence.ParseSchedule("v2")
	if err != nil {
		t.Fatal(err)
	}
	var all []snowfence.ID
	for _, h := range holders {
		if err := checkDecodes(sched, h.region.number, h.machine, h.ids); err != nil {
			t.Errorf("%s: %v", h.name, err)
		}
		for _, b := range h.bad {
			t.Errorf("%s: %s", h.name, b)
		}
		if len(h.bad) > 0 {
			t.Errorf("%s: %d answers were refusals or transport errors", h.name, len(h.bad))
		}
		if len(h.ids) == 0 {
			t.Errorf("%s acknowledged no IDs", h.name)
		}
		if h.region != killed && h.afterKill == 0 {
			t.Errorf("%s acknowledged nothing after %s was killed", h.name, killed.name)
		}
		t.Logf("%s: machine %d, %d requests, %d IDs acknowledged (%d requests after the kill)", h.name, h.machine, h.requests, len(h.ids), h.afterKill)
		all = append(all, h.ids...)
	}
	copyBegan := time.Now()
	dups := idtable.PrimaryKeyDuplicates(t, pgURL, all)
	t.Logf("COPY of %d IDs into the primary key: %s", len(all), time.Since(copyBegan).Round(time.Millisecond))
	if dups != 0 {
		t.Errorf("the PostgreSQL primary key found %d duplicate IDs among %d acknowledged", dups, len(all))
	}
	t.Logf("%d IDs acknowledged in all, %d duplicates under the PostgreSQL primary key; load %s, test %s",
		len(all), dups, loadEnded.Sub(ready).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// newRegions starts one Debian etcd per name, makes v2 the fleet schedule
// of each, and adds the regions to one registry copied to every store,
// each region's home its own store. It returns the regions with their
// registry numbers.
func newRegions(t *testing.T, names []string) []*mrRegion {
	t.Helper()
	regions := make([]*mrRegion, len(names))
	for i, name := range names {
		e := etcdtest.StartBinary(t, etcdtest.DebianEtcd)
		regions[i] = &mrRegion{name: name, etcd: e, url: e.Endpoints()[0]}
		setFleetV2(t, regions[i].url)
	}
	var copies []string
	for _, r := range regions[1:] {
		copies = append(copies, "--copy", "etcd://"+strings.TrimPrefix(r.url, "http://")+etcdstore.DefaultPrefix)
	}
	first := []string{"--etcd-endpoints", regions[0].url}
	for i, r := range regions { // each region's home its own store: copy i+1
		cli(t, 0, append(append([]string{"regions", "add", r.name, "--create", "--home", fmt.Sprint(i + 1)}, first...), copies...)...)
	}
	out, _ := cli(t, 0, append(append([]string{"regions", "list", "--json"}, first...), copies...)...)
	var reg regionsList
	if err := json.Unmarshal([]byte(out), &reg); err != nil {
		t.Fatalf("regions list --json: %q: %v", out, err)
	}
	for _, c := range reg.Copies[1:] {
		if !c.Same {
			t.Fatalf("registry copy %d (%s) differs from copy 1: %+v", c.Copy, c.Store, reg)
		}
	}
	numbers := map[int]bool{}
	for _, r := range regions {
		g, ok := registry.Registry{Regions: reg.Regions}.Named(r.name)
		if !ok || numbers[g.Number] {
			t.Fatalf("regions list: %s missing or its number %d taken twice: %+v", r.name, g.Number, reg.Regions)
		}
		r.number, numbers[g.Number] = g.Number, true
	}

	return regions
}

// setFleetV2 makes v2 the fleet schedule of a fresh store, through the
// store's Go API before any holder (snowfence schedule set v2 does the same
// on a store that holds no lease record: TestE2ERegionalStartFromCLI starts
// a regional fleet with the CLI alone).
func setFleetV2(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: []string{url}}, etcdstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.SetFleetSchedule(ctx, 0, "v2"); err != nil {
		t.Fatalf("set the fleet schedule of %s: %v", url, err)
	}
}

// start starts the holder as a process group of its own and waits
// (bounded) for it to say where it listens.
func (h *mrHolder) start(t *testing.T, bin string, args ...string) {
	t.Helper()
	// A dial timeout beyond serve's 5 s: on a loaded CI machine the
	// regions' etcds answered a holder's first call late (the test is
	// about where holders lease, not how fast an etcd answers).
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "warn", "--etcd-dial-timeout", "20s"}, args...)...)
	found := make(chan string, 1)
	p, err := spawn.Start(cmd, spawn.Config{Name: h.name, Group: true, Stdout: func(r io.Reader, stderr io.Writer) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	t.Cleanup(func() { p.Kill() })
	select {
	case h.url = <-found:
	case <-p.Done():
		t.Fatalf("%s exited before listening: %v\n%s", h.name, p.Err(), p.Tail())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not print its address within 60 s\n%s", h.name, p.Tail())
	}
}

// load posts batches until stop (or the count bound), recording what was
// acknowledged. In the killed region, the first failure after killing
// began ends the client: the holder is gone.
func (h *mrHolder) load(client *http.Client, plan mrPlan, doomed bool, killing, stop <-chan struct{}) {
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	n, phase := 0, false // requests in this phase; the phase is the second
	for !closed(stop) {
		after := closed(killing)
		if after != phase {
			n, phase = 0, after
		}
		if n == plan.maxRequests { // the count bound of the phase
			if after {
				return
			}
			select {
			case <-killing:
			case <-stop:
			}
			continue
		}
		n++
		resp, err := client.Post(h.url+"/v1/ids?count="+strconv.Itoa(plan.batch), "", nil)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		var b struct{ IDs []snowfence.ID }
		ok := err == nil && resp.StatusCode == 200 && json.Unmarshal(body, &b) == nil && len(b.IDs) == plan.batch
		h.mu.Lock()
		h.requests++
		switch {
		case ok:
			h.ids = append(h.ids, b.IDs...)
			if after {
				h.afterKill++
			}
		case doomed && closed(killing):
			h.mu.Unlock()
			return
		case err != nil:
			h.bad = append(h.bad, "transport error: "+err.Error())
		default:
			h.bad = append(h.bad, fmt.Sprintf("%d %.200s", resp.StatusCode, body))
		}
		h.mu.Unlock()
	}
}

// readMetrics reads the holder's /metrics: its lease (holder, machine,
// region) and generator (region, layout v2); at start it notes the holder
// and machine, afterwards it wants them unchanged, with no refusal, lost
// lease or failed renewal.
func (h *mrHolder) readMetrics(t *testing.T, atStart bool) {
	t.Helper()
	r := call(t, "GET", h.url+"/metrics", "", "")
	var holder, machine, leaseRegion, genRegion, layout string
	zero := map[string]bool{}
	for _, line := range strings.Split(r.body, "\n") {
		name, rest, _ := strings.Cut(line, "{")
		labels, value, _ := strings.Cut(rest, "} ")
		l := promLabels(labels)
		switch name {
		case "snowfence_lease_info":
			holder, machine, leaseRegion = l["holder"], l["machine"], l["region"]
		case "snowfence_generator_info":
			genRegion, layout = l["region"], l["layout"]
		case "snowfence_refusals_total":
			zero["refusals "+l["reason"]] = value == "0"
		}
		for _, c := range []string{"snowfence_lease_losses_total ", "snowfence_lease_renew_failures_total "} {
			if v, ok := strings.CutPrefix(line, c); ok {
				zero[strings.TrimSpace(c)] = v == "0"
			}
		}
	}
	m, err := strconv.Atoi(machine)
	if holder == "" || err != nil {
		t.Fatalf("%s /metrics: holder %q, machine %q: no lease", h.name, holder, machine)
	}
	if want := strconv.Itoa(h.region.number); leaseRegion != want || genRegion != want || layout != "v2" {
		t.Errorf("%s /metrics: lease region %q, generator region %q, layout %q; want region %s (the registry's %s) on v2",
			h.name, leaseRegion, genRegion, layout, want, h.region.name)
	}
	if atStart {
		h.holderID, h.machine = holder, m
		return
	}
	if holder != h.holderID || m != h.machine {
		t.Errorf("%s: holder %s machine %d at the end, %s machine %d at the start", h.name, holder, m, h.holderID, h.machine)
	}
	if len(zero) < 3 {
		t.Errorf("%s /metrics lacks the refusal and lease counters", h.name)
	}
	for what, isZero := range zero {
		if !isZero {
			t.Errorf("%s: %s is not zero", h.name, what)
		}
	}
}

// checkMachines: within a region every holder has a machine of its own.
func checkMachines(t *testing.T, regions []*mrRegion) {
	t.Helper()
	for _, r := range regions {
		seen := map[int]string{}
		for _, h := range r.holders {
			if o, ok := seen[h.machine]; ok {
				t.Errorf("%s and %s both hold machine %d in %s", o, h.name, h.machine, r.name)
			}
			seen[h.machine] = h.name
		}
	}
}

// checkLeaseRecords: each holder's lease, as its own /metrics names it, is
// held in its region's store under its region's number, and no store holds
// a lease under another region's number. The reads go through the proxies
// and are counted as the test's.
func checkLeaseRecords(t *testing.T, regions []*mrRegion) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, store := range regions {
		for _, keys := range regions {
			s, err := etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: []string{store.proxy.URL()}}, etcdstore.Config{Region: keys.number})
			if err != nil {
				t.Fatal(err)
			}
			recs, err := s.List(ctx)
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, rec := range recs {
				if rec.Held() {
					got = append(got, fmt.Sprintf("%s@%d", rec.Holder, rec.Machine))
				}
			}
			if store == keys {
				for _, h := range store.holders {
					want = append(want, fmt.Sprintf("%s@%d", h.holderID, h.machine))
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("store of %s, region %d (%s): leases held %v, want %v", store.name, keys.number, keys.name, got, want)
			}
		}
	}
}

// settle polls (bounded) until etcd's count of the calls it started since
// the test's first reading equals what its proxy saw, and returns the
// comparison for the log; the test fails if they never agree.
func (r *mrRegion) settle(t *testing.T, cutOff int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		after, streaming := grpcStarted(t, r.url)
		delta := map[string]float64{}
		for m, v := range after {
			delta[m] = v - r.before[m]
		}
		calls, _, _, _ := r.proxy.snapshot()
		lines, err := compareStoreCalls(delta, streaming, calls, cutOff)
		if err == nil {
			return lines
		}
		if time.Now().After(deadline) {
			t.Errorf("store of %s: %v", r.name, err)
			return lines
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}

// checkCallers: every connection to r's proxy, and every call through it,
// came from one of r's holders or from the test itself; each of r's holders
// called it. It logs the calls by caller.
func checkCallers(t *testing.T, r *mrRegion, regions []*mrRegion) {
	t.Helper()
	who := map[int]string{os.Getpid(): "test"}
	own := map[int]bool{os.Getpid(): true}
	for _, o := range regions {
		for _, h := range o.holders {
			who[h.p.Pid()] = h.name
			own[h.p.Pid()] = o == r
		}
	}
	calls, conns, _, faults := r.proxy.snapshot()
	for _, f := range faults {
		t.Errorf("proxy of %s: %s", r.name, f)
	}
	byCaller := map[int]int{}
	for k, v := range calls {
		byCaller[k.pid] += v.opened
	}
	for pid := range conns {
		if _, ok := byCaller[pid]; !ok {
			byCaller[pid] = 0
		}
	}
	var lines []string
	for pid, n := range byCaller {
		name, known := who[pid]
		if !known {
			name = fmt.Sprintf("pid %d (not a holder of the test)", pid)
		}
		lines = append(lines, fmt.Sprintf("%s %d calls on %d connections", name, n, conns[pid]))
		if !own[pid] {
			t.Errorf("store of %s was called by %s: %d calls on %d connections", r.name, name, n, conns[pid])
		}
	}
	for _, h := range r.holders {
		if byCaller[h.p.Pid()] == 0 {
			t.Errorf("%s made no call to its own store", h.name)
		}
	}
	slices.Sort(lines)
	t.Logf("callers of the store of %s: %s", r.name, strings.Join(lines, "; "))
}

// spotCheckDecode asks GET /v1/ids/{id}/decode of a surviving holder, whose
// names come from its own store's registry copy, about the first and last
// ID of every holder: the region name and number and the machine must be
// those of the holder that served it.
func spotCheckDecode(t *testing.T, regions []*mrRegion, killed *mrRegion) {
	t.Helper()
	var at []*mrHolder
	for _, r := range regions {
		if r != killed {
			at = append(at, r.holders[0])
		}
	}
	n := 0
	for _, r := range regions {
		for _, h := range r.holders {
			if len(h.ids) == 0 {
				continue
			}
			for _, id := range []snowfence.ID{h.ids[0], h.ids[len(h.ids)-1]} {
				d := at[n%len(at)]
				n++
				rep := call(t, "GET", d.url+"/v1/ids/"+id.String()+"/decode", "", "")
				var got snowfence.Decoded
				if err := json.Unmarshal([]byte(rep.body), &got); rep.status != 200 || err != nil {
					t.Errorf("decode %d at %s: %d %s", id, d.name, rep.status, rep.body)
					continue
				}
				if got.Region != r.name || got.RegionNumber != r.number || got.Machine != h.machine || got.Layout != "v2" {
					t.Errorf("decode %d (served by %s) at %s: %s; want %s, region %d, machine %d, v2", id, h.name, d.name, rep.body, r.name, r.number, h.machine)
				}
			}
		}
	}
}

// checkDecodes decodes every ID with the schedule and wants the region
// number and machine given, and the layout of the schedule's only step.
func checkDecodes(sched snowfence.Schedule, region, machine int, ids []snowfence.ID) error {
	layout := sched.Steps()[0].Layout.Name
	bad := 0
	var first string
	for _, id := range ids {
		d, err := sched.Decode(id)
		if err == nil && d.RegionNumber == region && d.Machine == machine && d.Layout == layout {
			continue
		}
		if bad++; bad == 1 {
			first = fmt.Sprintf("%d decodes to %+v (%v)", id, d, err)
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d IDs do not decode to region %d, machine %d, layout %s; the first: %s", bad, len(ids), region, machine, layout, first)
	}
	return nil
}

// The checks of the multi-region test can fail: an etcd that started calls
// its proxy did not see (a holder that reached it another way), a proxy
// that saw calls etcd never started, and an ID of another region or
// machine are each reported.
func TestMultiRegionChecksFail(t *testing.T) {
	streaming := map[string]bool{"/etcdserverpb.Lease/LeaseKeepAlive": true}
	proxied := map[proxyCall]callCount{
		{pid: 10, method: "/etcdserverpb.KV/Txn"}:               {opened: 3, ended: 2}, // one still sending
		{pid: 11, method: "/etcdserverpb.KV/Txn"}:               {opened: 1, ended: 1},
		{pid: 10, method: "/etcdserverpb.Lease/LeaseKeepAlive"}: {opened: 1},
	}
	for _, c := range []struct {
		name   string
		etcd   map[string]float64
		cutOff int
		ok     bool
	}{
		{"equal", map[string]float64{"/etcdserverpb.KV/Txn": 3, "/etcdserverpb.Lease/LeaseKeepAlive": 1}, 0, true},
		{"a call that bypassed the proxy", map[string]float64{"/etcdserverpb.KV/Txn": 4, "/etcdserverpb.Lease/LeaseKeepAlive": 1}, 0, false},
		{"a method only etcd saw", map[string]float64{"/etcdserverpb.KV/Txn": 3, "/etcdserverpb.Lease/LeaseKeepAlive": 1, "/etcdserverpb.KV/Range": 1}, 0, false},
		{"calls that never reached etcd", map[string]float64{"/etcdserverpb.KV/Txn": 3}, 0, false},
		{"a unary call cut off by a kill, excused", map[string]float64{"/etcdserverpb.KV/Txn": 2, "/etcdserverpb.Lease/LeaseKeepAlive": 1}, 1, true},
		{"more cut off than excused", map[string]float64{"/etcdserverpb.KV/Txn": 1, "/etcdserverpb.Lease/LeaseKeepAlive": 1}, 1, false},
		{"a bypass is never excused", map[string]float64{"/etcdserverpb.KV/Txn": 4, "/etcdserverpb.Lease/LeaseKeepAlive": 1}, 2, false},
	} {
		if _, err := compareStoreCalls(c.etcd, streaming, proxied, c.cutOff); (err == nil) != c.ok {
			t.Errorf("%s: compareStoreCalls = %v, want ok %v", c.name, err, c.ok)
		}
	}

	sched, err := snowfence.ParseSchedule("v2")
	if err != nil {
		t.Fatal(err)
	}
	l := sched.Steps()[0].Layout
	at := time.Now()
	id := func(region, machine int) snowfence.ID {
		id, err := l.ComposeAt(at, region, machine, 5)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	if err := checkDecodes(sched, 1, 7, []snowfence.ID{id(1, 7), id(1, 7) + 1}); err != nil {
		t.Errorf("IDs of region 1, machine 7: %v", err)
	}
	for _, c := range []struct {
		name string
		id   snowfence.ID
	}{{"another region", id(0, 7)}, {"another machine", id(1, 8)}} {
		if err := checkDecodes(sched, 1, 7, []snowfence.ID{id(1, 7), c.id}); err == nil {
			t.Errorf("an ID of %s passed", c.name)
		}
	}
}
