//go:build linux

package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/internal/testkit/idtable"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/server"
)

// The cutover test runs a v1→v2 cutover through three snowfence serve
// processes on one store, each on the fleet schedule v1,v2@T with T hours
// ahead, their wall clocks stepped over HTTP (--test-clock-offset) to just
// before T and across it while clients mint. Every holder may use v2
// numbers 0-1 only, so one of the three has no v2 number at T: it must
// refuse, naming v2, until another holder stops and releases its number.

// cutStore is one kind of store the cutover test runs on.
type cutStore struct {
	name  string
	flags []string // store flags, for serve and the CLI
}

// noticeWindow is the store's MaxNoticeWindow: a claim's first grant waits
// that long (on a table, the notice window of the tests' table bound,
// e2eTableMaxSelfFence, which startService gives every holder there).
func (s cutStore) noticeWindow() time.Duration {
	switch s.name {
	case "postgres", "dynamodb":
		return lease.NoticeWindow(e2eTableMaxSelfFence)
	}
	return etcdstore.MaxNoticeWindow
}

// Timings of every holder, on every store: a short renewal period, so that
// the keeper's turns (the v2 claim from the lead window on, the v1 release
// after T) come within a second; a 1 s margin below the mark (the tables'
// own is 5 s); a lead of 45 s, which holds the claim step (cutClaimStep) on
// every store.
var cutTimings = []string{"--lease-ttl", "10s", "--renew-every", "1s", "--self-fence", "5s", "--fence-margin", "1s", "--lead", "45s"}

// cutClaimStep is where the step into the lead window puts every holder's
// clock: T minus the store's notice window and 4 s, so that the v2 claims,
// made within a renewal period or two of it, start issuing before T (every
// claim's first grant waits the store's notice window: 8 s on etcd, 23 s on
// the tables in these tests).
func cutClaimStep(st cutStore) time.Duration { return st.noticeWindow() + 4*time.Second }

// cutFirstStep is where the test waits for every holder's renewals: T minus
// this, no further from T than the reserve (the lease TTL, 10 s) less the
// margin (1 s), so that the first v1 renewal after it lets the generator
// issue up to T.
const cutFirstStep = 8 * time.Second

// cutSecondStep is when the clients start minting: this long before T.
// The clocks get there in real time (a step forward would fence every
// generator until its next renewal, across T).
const cutSecondStep = 400 * time.Millisecond

// cutHolder is one serve of the test and what it answered, in the order
// its answers arrived (one client, one request at a time).
type cutHolder struct {
	name   string
	v1     int // its v1 number (--machines lo-lo)
	s      *service
	holder string // its holder identity, from /healthz
	v2     int    // its v2 number in the lead window; -1 for none

	mu       sync.Mutex
	acks     []cutAck
	refusals []cutRefusal
	bad      []string // transport errors and answers that are neither

	stop, done chan struct{} // of its client (startLoad)
}

// cutAck is one acknowledged batch.
type cutAck struct {
	ids []snowfence.ID
	at  time.Time
}

// cutRefusal is one 503.
type cutRefusal struct {
	code, reason, message string
	at                    time.Time
}

// TestE2ECutover: the cutover on etcd, PostgreSQL and DynamoDB (dynalite).
// For each store: v1 IDs on numbers 600-602 below T, v2 IDs of region 0
// on each holder's v2 number from T on; each holder's IDs increasing in the
// order acknowledged; the holder without a v2 number refused at T with a
// reason naming v2 and issuing no v2 ID until it claims the number another
// holder released on SIGTERM; the v1 numbers released after T with the end
// of their last ID (or T) as the mark; no duplicate under a PostgreSQL
// primary key.
func TestE2ECutover(t *testing.T) {
	t.Parallel() // mostly waits out the claims' notice windows on the lease tables: beside the other such tests
	pgURL := testenv.PostgresURL(t)
	suffix := randomSuffix(t)
	kinds := []struct {
		name  string
		store func(t *testing.T) cutStore
	}{
		{"etcd", func(t *testing.T) cutStore {
			e := etcdtest.StartBinary(t, etcdtest.DebianEtcd)
			return cutStore{"etcd", []string{"--etcd-endpoints", e.Endpoints()[0]}}
		}},
		{"postgres", func(t *testing.T) cutStore {
			// A table of its own: an earlier run's fleet schedule and
			// marks would be in the way.
			return cutStore{"postgres", []string{"--lease-store", "postgres", "--postgres-url", pgURL, "--postgres-table", "e2e_cutover_" + suffix}}
		}},
		{"dynamodb", func(t *testing.T) cutStore {
			ep := os.Getenv("SNOWFENCE_TEST_DYNAMODB_ENDPOINT")
			if ep == "" {
				testenv.Missing(t, "SNOWFENCE_TEST_DYNAMODB_ENDPOINT is not set: start dynalite with scripts/services/dynalite.sh start (scripts/test does)")
			}
			return cutStore{"dynamodb", []string{"--lease-store", "dynamodb", "--dynamodb-endpoint", ep, "--dynamodb-table", "e2e-cutover-" + suffix, "--aws-region", "us-east-1"}}
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel() // a store of its own; most of it waits out the claims' notice windows
			runCutover(t, k.store(t), pgURL)
		})
	}
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func runCutover(t *testing.T, st cutStore, pgURL string) {
	began := time.Now()
	with := func(args ...string) []string { return append(args, st.flags...) }
	if st.name != "etcd" {
		cli(t, 0, with("leases", "init")...)
	}
	// T on a whole second, hours ahead: snowfence schedule set takes it
	// (an hour's notice), so the fleet schedule is set as an operator would.
	T := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	tMs := T.UnixMilli()
	text := "v1,v2@" + T.UTC().Format(time.RFC3339)
	cli(t, 0, with("schedule", "set", text)...)
	sched, err := snowfence.ParseSchedule(text)
	if err != nil {
		t.Fatal(err)
	}

	holders := []*cutHolder{{name: "A", v1: 600}, {name: "B", v1: 601}, {name: "C", v1: 602}}
	for _, h := range holders {
		args := with("--schedule", text, "--test-clock-offset", "--machines", fmt.Sprintf("%d-%d,v2=0-1", h.v1, h.v1))
		h.s = startService(t, t.TempDir(), append(args, cutTimings...)...)
	}
	for _, h := range holders {
		waitIssuing(t, h.s)
		hz := readHealth(t, h.s)
		if hz.Lease == nil || hz.Lease.Machine != h.v1 || hz.Lease.Layout != "v1" || hz.Lease.Next != nil {
			t.Fatalf("%s /healthz at start: lease %+v; want v1 number %d and no next (the lead window is hours away)", h.name, hz.Lease, h.v1)
		}
		h.holder = hz.Lease.Holder
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	// Before T, on the real clock: bounded load.
	for _, h := range holders {
		h.startLoad(client, 20)
	}
	for _, h := range holders {
		<-h.done // its 20 answers
	}
	for _, h := range holders {
		if len(h.refusals) > 0 || len(h.bad) > 0 || len(h.acks) != 20 {
			t.Fatalf("%s before T: %d acknowledged, refusals %+v, bad %v", h.name, len(h.acks), h.refusals, h.bad)
		}
	}

	// Into the lead window: every clock to T - the claim step, one offset
	// for all, so they read the same (the offset is against this host's
	// clock). The v2 claims must be made within 3 s, so that their notice
	// windows end before T. The step is a forward jump, which fences each
	// generator until a renewal sent after it has been seen: one request
	// each lets the generator see it now, not in the load across T.
	claimStep := cutClaimStep(st)
	off0 := T.Add(-claimStep).UnixMilli() - time.Now().UnixMilli()
	for _, h := range holders {
		stepClock(t, h.s, fmt.Sprintf(`{"offset_ms":%d}`, off0))
	}
	stepped0 := time.Now()
	for _, h := range holders {
		call(t, "POST", h.s.url+"/v1/ids?count=1", "", "")
	}
	lacking := waitNext(t, holders, stepped0.Add(claimStep-st.noticeWindow()-time.Second))
	t.Logf("lead window reached %s after the step: v2 numbers %s=%d %s=%d, %s has none: %s",
		time.Since(stepped0).Round(time.Millisecond), holders[0].name, holders[0].v2, holders[1].name, holders[1].v2,
		lacking.name, readHealth(t, lacking.s).Lease.Next.LastError)
	// realAt is when the stepped clocks read at.
	realAt := func(at time.Time) time.Time { return time.UnixMilli(at.UnixMilli() - off0) }

	// Then, in real time, to T - 8 s: the v2 claims' notice windows run on
	// the monotonic clock too, which no step shortens. There wait for every
	// holder's renewals, which reserve up to T and past it: the v1
	// number's, and the v2 number's (claimed at T - the claim step, its
	// mark is short of T until it renews at T - 8 s).
	time.Sleep(time.Until(realAt(T.Add(-cutFirstStep)))) // the clocks' time passing, not synchronisation
	renewedBy := time.Now().Add(5 * time.Second)
	for _, h := range holders {
		for {
			hz := readHealth(t, h.s)
			v1 := hz.Lease != nil && !hz.Lease.LastRenewal.Before(T.Add(-cutFirstStep))
			v2 := h == lacking || hz.Lease != nil && hz.Lease.Next != nil && !hz.Lease.Next.LastRenewal.Before(T.Add(-cutFirstStep))
			if v1 && v2 {
				break
			}
			if time.Now().After(renewedBy) {
				var next lease.Status
				if hz.Lease != nil && hz.Lease.Next != nil {
					next = *hz.Lease.Next
				}
				t.Fatalf("%s did not renew its v1 and v2 numbers within 5 s of T - %s: %+v; v2: %+v", h.name, cutFirstStep, hz.Lease, next)
			}
			time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
		}
	}

	// Across T with the clients minting, from T - 400 ms.
	if time.Now().After(realAt(T.Add(-cutSecondStep))) {
		t.Fatalf("the clocks passed T - %s before the load (the renewals at T - %s took too long)", cutSecondStep, cutFirstStep)
	}
	time.Sleep(time.Until(realAt(T.Add(-cutSecondStep)))) // the clocks' time passing, not synchronisation
	for _, h := range holders {
		h.startLoad(client, cutMaxAcks)
		defer h.haltLoad()
	}
	realT := realAt(T) // when the stepped clocks read T

	// After T: every v1 number released, the lacking holder refused
	// naming v2 and the others issuing v2 IDs.
	var v1recs map[int]leaseRec
	deadline := time.Now().Add(15 * time.Second)
	for {
		v1recs = map[int]leaseRec{}
		released := 0
		for _, h := range holders {
			r := showLease(t, with("leases", "show", strconv.Itoa(h.v1), "--layout", "v1", "--json")...)
			v1recs[h.v1] = r
			if r.Holder == "" {
				released++
			}
		}
		done := released == len(holders) && lacking.refusedAfter(realT) && time.Now().After(realT)
		for _, h := range holders {
			if h != lacking {
				done = done && h.ackedAt(sched, tMs)
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			// Go on: the checks below say what went wrong.
			t.Errorf("15 s after the load began: v1 records %+v; %s refused after T: %v", v1recs, lacking.name, lacking.refusedAfter(realT))
			break
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		r := call(t, "GET", lacking.s.url+path, "", "")
		if r.status != 503 || !strings.Contains(r.body, "layout v2") {
			t.Errorf("%s %s after T without a v2 number: %d %.400s; want 503 naming layout v2", lacking.name, path, r.status, r.body)
		}
	}
	var v2recs []leaseRec
	out, _ := cli(t, 0, with("leases", "list", "--layout", "v2", "--json")...)
	if err := json.Unmarshal([]byte(out), &v2recs); err != nil {
		t.Fatalf("leases list --layout v2: %q: %v", out, err)
	}
	want := map[int]string{}
	for _, h := range holders {
		if h != lacking {
			want[h.v2] = h.holder
		}
	}
	checkHeld(t, "after T", v2recs, want)

	// One of the others stops: it releases its v2 number, which the
	// lacking holder claims and issues on.
	var leaving *cutHolder
	for _, h := range holders {
		if h != lacking {
			leaving = h // the last such
		}
	}
	leaving.haltLoad()
	stopAt := time.Now()
	leaving.s.stop(t)
	t.Logf("%s stopped (SIGTERM) with %d batches acknowledged", leaving.name, len(leaving.acks))
	// Its claim, then its claim's notice window (8 s on etcd, 23 s on the
	// tables in these tests) before it issues.
	within := 10*time.Second + st.noticeWindow()
	deadline = time.Now().Add(within)
	for !lacking.ackedAt(sched, tMs) {
		if time.Now().After(deadline) {
			t.Fatalf("%s issued no v2 ID within %s of %s's stop: %s", lacking.name, within, leaving.name, readHealthBody(t, lacking.s))
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
	out, _ = cli(t, 0, with("leases", "list", "--layout", "v2", "--json")...)
	v2recs = nil
	if err := json.Unmarshal([]byte(out), &v2recs); err != nil {
		t.Fatalf("leases list --layout v2: %q: %v", out, err)
	}
	want[leaving.v2] = lacking.holder
	checkHeld(t, "after "+leaving.name+" stopped", v2recs, want)
	lacking.v2 = leaving.v2
	for _, h := range holders {
		h.haltLoad()
	}
	for _, h := range holders {
		if h != leaving {
			h.s.stop(t)
		}
	}

	// Every acknowledged ID.
	var all []snowfence.ID
	straddled := 0
	for _, h := range holders {
		for _, b := range h.bad {
			t.Errorf("%s: %s", h.name, b)
		}
		if h != lacking && len(h.refusals) > 0 {
			t.Errorf("%s has a v2 number and was refused %d times, the first %+v", h.name, len(h.refusals), h.refusals[0])
		}
		for _, r := range h.refusals {
			if h == lacking && !r.at.Before(stopAt) && r.code == server.CodeFenced && r.reason == "not-started" {
				continue // its claim of the stopped holder's number waits out its notice window
			}
			if r.code != server.CodeFenced || !strings.Contains(r.message, "layout v2") || r.at.Before(realT) {
				t.Errorf("%s refused %s (code %s, %s) %s T; want fenced naming layout v2, after T only", h.name, r.message, r.code, r.reason, map[bool]string{true: "before", false: "after"}[r.at.Before(realT)])
				break
			}
		}
		var last snowfence.ID
		lastV1End := int64(0)
		v1n, v2n := 0, 0
		for i, a := range h.acks {
			if a.ids[0] < tIDBound(sched, tMs) && a.ids[len(a.ids)-1] >= tIDBound(sched, tMs) {
				straddled++
			}
			for _, id := range a.ids {
				if id <= last {
					t.Fatalf("%s: batch %d: ID %d is not above the one acknowledged before it, %d", h.name, i, id, last)
				}
				last = id
				d, err := sched.Decode(id)
				ms := d.CreatedAt.UnixMilli()
				wantLayout, wantMachine := "v1", h.v1
				if ms >= tMs {
					wantLayout, wantMachine = "v2", h.v2
					v2n++
					if h == lacking && !a.at.After(stopAt) {
						t.Fatalf("%s issued v2 ID %d (acknowledged %s) before %s stopped", h.name, id, a.at.Format(time.RFC3339Nano), leaving.name)
					}
				} else {
					lastV1End = ms + 1
					v1n++
				}
				if err != nil || d.Layout != wantLayout || d.RegionNumber != 0 || d.Machine != wantMachine {
					t.Fatalf("%s: ID %d decodes to %+v (%v); want %s, region 0, machine %d", h.name, id, d, err, wantLayout, wantMachine)
				}
			}
			all = append(all, a.ids...)
		}
		// Released with the end of the last ID issued before T, or T:
		// the generator's last issued timestamp is the mark, held to T,
		// and a v2 ID issued before the release, or a batch refused at
		// T after reserving IDs at T-1ms, makes it T.
		r := v1recs[h.v1]
		if r.Holder != "" {
			t.Errorf("%s: v1 number %d still held by %s after T", h.name, h.v1, r.Holder)
		}
		if r.MarkMs != lastV1End && r.MarkMs != tMs {
			t.Errorf("%s: v1 number %d released with mark %s; want the end of its last v1 ID, %s, or T, %s",
				h.name, h.v1, lease.FormatMs(r.MarkMs), lease.FormatMs(lastV1End), lease.FormatMs(tMs))
		}
		t.Logf("%s: v1 %d, v2 %d: %d v1 IDs, %d v2 IDs in %d batches, %d refusals; v1 released with mark T%+dms (last v1 ID ended at T%+dms)",
			h.name, h.v1, h.v2, v1n, v2n, len(h.acks), len(h.refusals), r.MarkMs-tMs, lastV1End-tMs)
		if v1n == 0 || (v2n == 0) {
			t.Errorf("%s issued %d v1 and %d v2 IDs; want both", h.name, v1n, v2n)
		}
	}
	dups := idtable.PrimaryKeyDuplicates(t, pgURL, all)
	if dups != 0 {
		t.Errorf("the PostgreSQL primary key found %d duplicate IDs among %d acknowledged", dups, len(all))
	}
	t.Logf("%s: %d IDs acknowledged, %d duplicates under the primary key; %d batches straddled T; test %s",
		st.name, len(all), dups, straddled, time.Since(began).Round(time.Millisecond))
	if t.Failed() {
		for _, h := range holders {
			t.Logf("%s's log (warnings and errors):\n%s", h.name, h.s.stderr)
		}
	}
}

// tIDBound is the smallest ID at T: every ID below it is before T.
func tIDBound(sched snowfence.Schedule, tMs int64) snowfence.ID {
	l := sched.Steps()[1].Layout
	id, _ := l.ComposeAt(time.UnixMilli(tMs), 0, 0, 0)
	return id
}

// leaseRec is a record as snowfence leases prints it with --json.
type leaseRec struct {
	Machine int    `json:"machine"`
	Holder  string `json:"holder"`
	MarkMs  int64  `json:"mark_ms"`
}

// showLease runs snowfence leases show … --json for one record.
func showLease(t *testing.T, args ...string) leaseRec {
	t.Helper()
	out, _ := cli(t, 0, args...)
	var recs []leaseRec
	if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 {
		t.Fatalf("snowfence %v: %q: %v", args, out, err)
	}
	return recs[0]
}

// checkHeld wants the records held to be exactly want (number → holder).
func checkHeld(t *testing.T, when string, recs []leaseRec, want map[int]string) {
	t.Helper()
	got := map[int]string{}
	for _, r := range recs {
		if r.Holder != "" {
			got[r.Machine] = r.Holder
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: v2 numbers held %v, want %v", when, got, want)
	}
}

// healthBody is what /healthz says, on a 200 or inside "health" on a 503.
type healthBody struct {
	Issuing bool          `json:"issuing"`
	Lease   *lease.Status `json:"lease"`
}

func readHealthBody(t *testing.T, s *service) string {
	t.Helper()
	return call(t, "GET", s.url+"/healthz", "", "").body
}

func readHealth(t *testing.T, s *service) healthBody {
	t.Helper()
	r := call(t, "GET", s.url+"/healthz", "", "")
	var h struct {
		healthBody
		Health *healthBody `json:"health"`
	}
	if err := json.Unmarshal([]byte(r.body), &h); err != nil {
		t.Fatalf("/healthz: %d %s: %v", r.status, r.body, err)
	}
	if h.Health != nil {
		return *h.Health
	}
	return h.healthBody
}

// waitNext polls /healthz (bounded by until) until every holder issues
// again on its v1 number after the step and the v2 claims are decided:
// two hold a v2 number, and one has been refused one. It records the v2
// numbers and returns the holder without one.
func waitNext(t *testing.T, holders []*cutHolder, until time.Time) *cutHolder {
	t.Helper()
	for {
		var lacking []*cutHolder
		held, issuing := 0, 0
		var states []string
		for _, h := range holders {
			hz := readHealth(t, h.s)
			h.v2 = -1
			if hz.Issuing {
				issuing++
			}
			n := (*lease.Status)(nil)
			if hz.Lease != nil {
				n = hz.Lease.Next
			}
			switch {
			case n == nil:
				states = append(states, h.name+": no next")
			case n.State == lease.StateHeld:
				held++
				h.v2 = n.Machine
				states = append(states, fmt.Sprintf("%s: v2 %d held", h.name, n.Machine))
			case n.LastError != "":
				lacking = append(lacking, h)
				states = append(states, fmt.Sprintf("%s: %s (%s)", h.name, n.State, n.LastError))
			default:
				states = append(states, fmt.Sprintf("%s: %s", h.name, n.State))
			}
		}
		if issuing == len(holders) && held == len(holders)-1 && len(lacking) == 1 {
			return lacking[0]
		}
		if held == len(holders) {
			t.Fatalf("every holder holds a v2 number, though there are two: %v", states)
		}
		if time.Now().After(until) {
			t.Fatalf("the lead window's claims not decided in time (%d issuing): %v", issuing, states)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}

// cutMaxAcks bounds the batches acknowledged per holder from the lead
// window on: a run that stalls still checks its IDs in the primary key
// within that helper's 30 s.
const cutMaxAcks = 2000

// startLoad starts the holder's client: n acknowledged batches, or fewer
// if haltLoad comes first.
func (h *cutHolder) startLoad(client *http.Client, n int) {
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(h.done)
		h.load(client, h.stop, n)
	}()
}

// haltLoad stops the holder's client and waits for its last answer; the
// second call does nothing.
func (h *cutHolder) haltLoad() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
}

// load posts batches of 1000, one at a time, until stop, n acknowledged or
// 20n sent, recording each answer in the order it arrived. After a refusal
// it waits 10 ms before asking again, so a refusing holder is not spun on.
func (h *cutHolder) load(client *http.Client, stop <-chan struct{}, n int) {
	for acked, sent := 0, 0; acked < n && sent < 20*n; sent++ { // sent: a bound should every answer be a refusal
		select {
		case <-stop:
			return
		default:
		}
		resp, err := client.Post(h.s.url+"/v1/ids?count=1000", "", nil)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		at := time.Now()
		var b struct {
			IDs   []snowfence.ID
			Error struct{ Code, Message, Reason string }
		}
		h.mu.Lock()
		switch {
		case err != nil:
			h.bad = append(h.bad, "transport error: "+err.Error())
		case json.Unmarshal(body, &b) != nil:
			h.bad = append(h.bad, fmt.Sprintf("%d %.200s", resp.StatusCode, body))
		case resp.StatusCode == 200 && len(b.IDs) == 1000:
			h.acks = append(h.acks, cutAck{ids: b.IDs, at: at})
			acked++
		case resp.StatusCode == 503:
			h.refusals = append(h.refusals, cutRefusal{code: b.Error.Code, reason: b.Error.Reason, message: b.Error.Message, at: at})
		default:
			h.bad = append(h.bad, fmt.Sprintf("%d %.200s", resp.StatusCode, body))
		}
		refused := resp != nil && resp.StatusCode == 503
		h.mu.Unlock()
		if refused || err != nil {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond): // pacing, not synchronisation
			}
		}
	}
}

// refusedAfter reports whether a refusal arrived after at.
func (h *cutHolder) refusedAfter(at time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.refusals) > 0 && h.refusals[len(h.refusals)-1].at.After(at)
}

// ackedAt reports whether an acknowledged batch holds an ID at or after T.
func (h *cutHolder) ackedAt(sched snowfence.Schedule, tMs int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.acks) > 0 && h.acks[len(h.acks)-1].ids[999] >= tIDBound(sched, tMs)
}
