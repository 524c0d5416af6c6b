package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/lease"
)

// The end-to-end tests run the real binary, built from this package, on
// free loopback ports with its embedded etcd, and talk to it over HTTP.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/snowfence once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "snowfence-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "snowfence")
		out, err := exec.Command("go", "build", "-tags", "snowfence_testbound", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// service is a running "snowfence serve".
type service struct {
	cmd    *exec.Cmd
	url    string
	admin  string // the admin listener's URL, with --admin-listen
	stderr *bytes.Buffer
	done   chan error
}

var (
	listenLine = regexp.MustCompile(`listening on (https?://127\.0\.0\.1:\d+)`)
	adminLine  = regexp.MustCompile(`^admin on (http://127\.0\.0\.1:\d+)`)
)

// startService starts serve with its embedded etcd in dataDir and waits
// (bounded) for it to print where it listens (and, before that, where its
// admin listener is, if it has one).
// e2eTableMaxSelfFence is the lease tables' test bound (internal/testbound,
// which the binary these tests build reads from the environment TestMain
// sets for every process they start), and the self-fence of every holder
// startService starts on a table when the test gives none: a claim then
// waits its notice window, 23 s, not the 4 min 40 s of the tables' own
// bound, which their 4 min 10 s self-fence needs (docs/lease-stores.md).
const e2eTableMaxSelfFence = 20 * time.Second

// tableBound is the flags startService adds for a holder on a store with
// the tables' timings (--lease-store postgres, dynamodb, zookeeper or
// kubernetes in args): e2eTableMaxSelfFence as the self-fence if args give none.
func tableBound(args []string) []string {
	i := slices.IndexFunc(args, func(a string) bool { return a == "--lease-store" || a == "--store" })
	if i < 0 || i+1 >= len(args) || !slices.Contains([]string{"postgres", "dynamodb", "zookeeper", "kubernetes"}, args[i+1]) || slices.Contains(args, "--self-fence") {
		return nil
	}
	return []string{"--self-fence", e2eTableMaxSelfFence.String()}
}

func startService(t *testing.T, dataDir string, extra ...string) *service {
	t.Helper()
	return startServiceVia(t, nil, dataDir, extra...)
}

// startServiceVia is startService run through the command prefix via, which
// execs the binary given as its next argument with the rest (e.g. a shell
// that lowers a limit first: the process keeps its PID); nil: none.
func startServiceVia(t *testing.T, via []string, dataDir string, extra ...string) *service {
	t.Helper()
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--log-level", "warn"}
	if !slices.Contains(extra, "--etcd-endpoints") {
		args = append(args, "--embedded-etcd-url", "http://127.0.0.1:0")
	}
	args = append(args, extra...)
	args = append(args, tableBound(extra)...)
	cmd := exec.Command(binary(t), args...)
	if len(via) > 0 {
		cmd = exec.Command(via[0], append(append(via[1:len(via):len(via)], binary(t)), args...)...)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &service{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := adminLine.FindStringSubmatch(sc.Text()); m != nil {
				s.admin = m[1] // printed before the listening line
			}
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
	})
	select {
	case s.url = <-found:
	case err := <-s.done:
		s.done <- err // for the cleanup
		t.Fatalf("serve exited before listening: %v\n%s", err, s.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not print its address within 60 s\n%s", s.stderr)
	}
	return s
}

// stop sends SIGTERM and waits (bounded) for a clean exit.
func (s *service) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM\n%s", err, s.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop within 30 s of SIGTERM")
	}
}

type reply struct {
	status int
	header http.Header
	body   string
}

func call(t *testing.T, method, url, contentType, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func TestE2EEndpoints(t *testing.T) {
	t.Parallel()
	s := startService(t, t.TempDir(), "--machines", "37-37")

	// POST /v1/ids
	r := call(t, "POST", s.url+"/v1/ids", "", "")
	var one struct {
		ID    string `json:"id"`
		IDNum json.Number
	}
	dec := json.NewDecoder(strings.NewReader(r.body))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); r.status != 200 || err != nil {
		t.Fatalf("POST /v1/ids: %d %s", r.status, r.body)
	}
	one.ID, _ = raw["id"].(string)
	one.IDNum, _ = raw["id_num"].(json.Number)
	id, err := snowfence.ParseID(one.ID)
	if err != nil || one.IDNum.String() != one.ID {
		t.Fatalf("id %q, id_num %q: want the same exact integer", one.ID, one.IDNum)
	}
	if d, _ := snowfence.Decode(id); d.Machine != 37 {
		t.Errorf("machine %d, want 37 (--machines 37-37)", d.Machine)
	}

	// Batches by body and by query: increasing, the right count.
	for _, tc := range []struct{ url, body string }{
		{"/v1/ids:batch", `{"count": 1000}`},
		{"/v1/ids?count=7", ""},
	} {
		r := call(t, "POST", s.url+tc.url, "application/json", tc.body)
		var b struct{ IDs []snowfence.ID }
		if err := json.Unmarshal([]byte(r.body), &b); r.status != 200 || err != nil {
			t.Fatalf("POST %s: %d %s", tc.url, r.status, r.body)
		}
		if !slices.IsSorted(b.IDs) || len(b.IDs) == 0 || b.IDs[0] <= id {
			t.Errorf("POST %s: %d IDs, not increasing after %d", tc.url, len(b.IDs), id)
		}
	}

	// Decode the DESIGN's worked example.
	r = call(t, "GET", s.url+"/v1/ids/97301141913751557/decode", "", "")
	want := `{"id":"97301141913751557","layout":"v1","created_at":"2026-09-26T12:00:00.000Z","region":"0","region_number":0,"machine":37,"sequence":5}`
	if r.status != 200 || strings.TrimSpace(r.body) != want {
		t.Errorf("decode: %d %s\nwant %s", r.status, r.body, want)
	}

	// Health, readiness, metrics, the API description.
	for _, tc := range []struct{ path, contains string }{
		{"/healthz", `"issuing":true`},
		{"/readyz", `"ready":true`},
		{"/metrics", "snowfence_ids_issued_total"},
		{"/openapi.json", `"openapi"`},
	} {
		r := call(t, "GET", s.url+tc.path, "", "")
		if r.status != 200 || !strings.Contains(r.body, tc.contains) {
			t.Errorf("GET %s: %d, body lacks %q:\n%.300s", tc.path, r.status, tc.contains, r.body)
		}
	}

	// Every bad input: a 4xx with a JSON error, and nothing issued.
	bad := []struct {
		method, path, ctype, body string
		status                    int
	}{
		{"GET", "/v1/ids", "", "", 405},
		{"DELETE", "/v1/ids:batch", "", "", 405},
		{"POST", "/v1/ids/1/decode", "", "", 405},
		{"POST", "/v1/ids:batch", "application/json", `{}`, 400},
		{"POST", "/v1/ids:batch", "application/json", `{"count":0}`, 400},
		{"POST", "/v1/ids:batch", "application/json", `{"count":1001}`, 400},
		{"POST", "/v1/ids:batch", "application/json", `{"count":-1}`, 400},
		{"POST", "/v1/ids:batch", "application/json", `{"count":"ten"}`, 400},
		{"POST", "/v1/ids:batch", "application/json", `{"count":1.5}`, 400},
		{"POST", "/v1/ids:batch", "application/json", `{"count":5,"extra":1}`, 400},
		{"POST", "/v1/ids:batch", "application/json", `{"count":5} trailing`, 400},
		{"POST", "/v1/ids:batch", "application/json", `{"count":5,"pad":"` + strings.Repeat("x", 5000) + `"}`, 413},
		{"POST", "/v1/ids?count=0", "", "", 400},
		{"POST", "/v1/ids?count=1001", "", "", 400},
		{"POST", "/v1/ids?count=ten", "", "", 400},
		{"POST", "/v1/ids?count=1.5", "", "", 400},
		{"POST", "/v1/ids?count=-1", "", "", 400},
		{"GET", "/v1/ids/12x/decode", "", "", 400},
		{"GET", "/v1/ids/-5/decode", "", "", 400},
		{"GET", "/v1/ids/9223372036854775808/decode", "", "", 400},
		// 9223372036854775807 (2095, in the future) decodes with a warning: TestDecodeFutureID.
		{"GET", "/nope", "", "", 404},
	}
	before := metricValue(t, s.url, "snowfence_ids_issued_total")
	for _, b := range bad {
		r := call(t, b.method, s.url+b.path, b.ctype, b.body)
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal([]byte(r.body), &e); r.status != b.status || err != nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Errorf("%s %s %.40q: %d %.200s; want %d with a JSON error", b.method, b.path, b.body, r.status, r.body, b.status)
		}
		if r.status == 405 && r.header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", b.method, b.path)
		}
	}
	if after := metricValue(t, s.url, "snowfence_ids_issued_total"); after != before {
		t.Errorf("bad input issued IDs: %s -> %s", before, after)
	}
	s.stop(t)
}

// metricValue reads one unlabelled metric from /metrics.
func metricValue(t *testing.T, url, name string) string {
	t.Helper()
	r := call(t, "GET", url+"/metrics", "", "")
	for _, line := range strings.Split(r.body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	t.Fatalf("metric %s not in /metrics", name)
	return ""
}

// JavaScript parses the response with JSON.parse: the string id survives
// exactly; id_num is above 2^53, where a JavaScript number cannot hold every
// integer. (A given ID can still come through exactly, when its low bits
// happen to be zero — sequence 0 on an even machine number — so the loss is
// shown on the odd number next to it, which no double can hold.) This is
// why IDs travel as strings.
func TestE2ENodeJSONParse(t *testing.T) {
	t.Parallel()
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node (Node.js) not found: apt-get install nodejs (scripts/test installs it)")
	}
	s := startService(t, t.TempDir())
	script := `
const res = await fetch(process.env.SNOWFENCE_URL + "/v1/ids", {method: "POST"});
const text = await res.text();
const body = JSON.parse(text);
const raw = /"id_num":(\d+)/.exec(text)[1];
console.log(JSON.stringify({
  status: res.status,
  id: body.id,
  idNumAsParsed: String(body.id_num),
  idNumRaw: raw,
  stringExact: body.id === raw,
  safe: Number.isSafeInteger(body.id_num),
  oddExact: (() => { const odd = String(BigInt(raw) | 1n); return String(JSON.parse('{"n":' + odd + '}').n) === odd; })(),
}));`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "--input-type=module", "-e", script)
	cmd.Env = append(os.Environ(), "SNOWFENCE_URL="+s.url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		Status                      int
		ID, IDNumAsParsed, IDNumRaw string
		StringExact, Safe, OddExact bool
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %s: %v", out, err)
	}
	t.Logf("JSON.parse in Node.js: id %q, id_num parsed as %s (raw %s)", got.ID, got.IDNumAsParsed, got.IDNumRaw)
	if got.Status != 200 || !got.StringExact {
		t.Errorf("the string id did not survive JSON.parse: %+v", got)
	}
	if got.Safe || got.OddExact {
		t.Errorf("id_num is a safe JavaScript integer, or an odd ID next to it survived JSON.parse exactly (%+v): IDs should be above 2^53", got)
	}
	s.stop(t)
}

// SIGTERM mid-load: every acknowledged ID is unique, the in-flight requests
// finish, and the next start on the same number repeats none of them.
func TestE2ESigtermMidLoad(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	first := startService(t, dataDir, "--machines", "5-5")
	ids1, cut1 := load(t, first, func() { first.stop(t) })
	second := startService(t, dataDir, "--machines", "5-5")
	ids2, _ := load(t, second, func() { second.stop(t) })

	if len(ids1) == 0 || len(ids2) == 0 {
		t.Fatalf("no IDs acknowledged: %d before, %d after the restart", len(ids1), len(ids2))
	}
	seen := map[snowfence.ID]bool{}
	for _, id := range append(slices.Clone(ids1), ids2...) {
		if seen[id] {
			t.Fatalf("duplicate ID %d", id)
		}
		seen[id] = true
	}
	if max1, min2 := slices.Max(ids1), slices.Min(ids2); min2 <= max1 {
		t.Fatalf("after the restart the first ID %d is not above the last before it %d", min2, max1)
	}
	// The high-water mark beside the data directory covers every ID
	// issued: a restore of the directory cannot take it back.
	hw, err := lease.NewHighWaterFile(dataDir+embedetcd.HighWaterSuffix, false).Load()
	if last := slices.Max(ids2).Time().UnixMilli(); err != nil || hw <= last {
		t.Errorf("high-water mark beside the data directory: %d, %v; want above the last ID's %d", hw, err, last)
	}
	t.Logf("%d IDs acknowledged before SIGTERM (%d requests not answered once shutdown began), %d after the restart, no duplicate",
		len(ids1), cut1, len(ids2))
}

// load runs 8 clients posting batches of 100 until the service stops; stop is
// called after 300 acknowledged requests. It returns every acknowledged ID and
// how many requests got no answer (the listener closed under them: not
// acknowledged, so nothing is lost). Every answer must be a 200 with 100
// IDs: a draining server still finishes what it accepted, and a refusal here
// would mean the shutdown stopped the generator under requests in flight. A
// transport error while no shutdown has begun fails the test.
func load(t *testing.T, s *service, stop func()) ([]snowfence.ID, int) {
	t.Helper()
	var (
		mu    sync.Mutex
		ids   []snowfence.ID
		acked int
		cut   int
		bad   []string
	)
	stopping := make(chan struct{})
	stopped := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100_000 && time.Now().Before(deadline); i++ {
				resp, err := client.Post(s.url+"/v1/ids?count=100", "", nil)
				if err != nil {
					began := false
					select {
					case <-stopping:
						began = true
					default:
					}
					mu.Lock()
					if began {
						cut++
					} else {
						bad = append(bad, "sent before the shutdown, not answered: "+err.Error())
					}
					mu.Unlock()
					select {
					case <-stopped:
						return // the service is gone
					default:
						continue
					}
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var b struct{ IDs []snowfence.ID }
				mu.Lock()
				if err := json.Unmarshal(body, &b); resp.StatusCode == 200 && err == nil && len(b.IDs) == 100 {
					ids = append(ids, b.IDs...)
					acked++
				} else {
					bad = append(bad, fmt.Sprintf("%d %.200s", resp.StatusCode, body))
				}
				n := acked
				mu.Unlock()
				if n == 300 {
					once.Do(func() {
						close(stopping)
						go func() {
							stop()
							close(stopped)
						}()
					})
				}
			}
		}()
	}
	wg.Wait()
	<-stopped
	for i, b := range bad {
		if i == 5 {
			t.Errorf("… and %d more", len(bad)-5)
			break
		}
		t.Errorf("bad answer: %s", b)
	}
	return ids, cut
}

// snowfence leases, next to a running serve: it finds the embedded etcd
// through the data directory.
func TestE2ELeasesCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startService(t, dir, "--machines", "40-40")
	cliErr := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(binary(t), append(args, "--data-dir", dir)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != wantCode {
			t.Fatalf("snowfence %v: exit %d, want %d\nstdout %s\nstderr %s", args, code, wantCode, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	cli := func(wantCode int, args ...string) string {
		t.Helper()
		out, _ := cliErr(wantCode, args...)
		return out
	}
	type rec struct {
		Machine     int    `json:"machine"`
		Holder      string `json:"holder"`
		Token       uint64 `json:"token"`
		MarkMs      int64  `json:"mark_ms"`
		Quarantined bool   `json:"quarantined"`
	}
	var recs []rec
	if err := json.Unmarshal([]byte(cli(0, "leases", "list", "--json")), &recs); err != nil || len(recs) != 1 || recs[0].Machine != 40 || recs[0].Holder == "" || recs[0].Token == 0 {
		t.Fatalf("leases list --json = %+v, %v; want machine 40 held", recs, err)
	}
	if out := cli(0, "leases", "show", "40"); !strings.Contains(out, "MACHINE") || !strings.Contains(out, recs[0].Holder) {
		t.Errorf("leases show 40:\n%s", out)
	}
	cli(0, "leases", "quarantine", "40")
	if err := json.Unmarshal([]byte(cli(0, "leases", "show", "40", "--json")), &recs); err != nil || !recs[0].Quarantined {
		t.Fatalf("after quarantine: %+v, %v", recs, err)
	}
	cli(0, "leases", "release", "40")
	cli(1, "leases", "release", "40") // not quarantined any more
	// raise-marks takes a fleet out of service: without a terminal to
	// ask on it needs --yes, and raises nothing without it.
	if _, errOut := cliErr(2, "leases", "raise-marks", "--to", "now+1m", "--machines", "41-42"); !strings.Contains(errOut, "--yes") ||
		!strings.Contains(errOut, "raise every mark") {
		t.Errorf("raise-marks without --yes: stderr %s; want the plan and a refusal naming --yes", errOut)
	}
	if err := json.Unmarshal([]byte(cli(0, "leases", "show", "41", "--json")), &recs); err != nil || recs[0].MarkMs != 0 {
		t.Fatalf("after a raise-marks refused for want of --yes: %+v, %v; want 41 untouched", recs, err)
	}
	out := cli(0, "leases", "raise-marks", "--to", "now+1m", "--machines", "41-42", "--layout", "v1", "--json", "--yes")
	var raised struct{ Raised, Numbers, Keyspaces int }
	if err := json.Unmarshal([]byte(out), &raised); err != nil || raised.Raised != 2 || raised.Numbers != 2 || raised.Keyspaces != 1 {
		t.Errorf("raise-marks --layout v1: %s", out)
	}
	// Without --layout, every layout step's keyspace: a restore takes
	// them all back, whatever the restored fleet schedule says. It
	// counts numbers and keyspaces apart.
	out = cli(0, "leases", "raise-marks", "--to", "now+1m", "--machines", "41-42", "--json", "--yes")
	if err := json.Unmarshal([]byte(out), &raised); err != nil || raised.Raised != 2*lease.MaxSteps || raised.Numbers != 2 || raised.Keyspaces != lease.MaxSteps {
		t.Errorf("raise-marks: %s, want %d raised (2 numbers in each of %d keyspaces)", out, 2*lease.MaxSteps, lease.MaxSteps)
	}
	if out := cli(0, "leases", "raise-marks", "--to", "now+1m", "--machines", "43-46", "--yes"); !strings.Contains(out, "raised the marks of 4 numbers (43-46) in each of 16 keyspaces") {
		t.Errorf("raise-marks says %q; want numbers and keyspaces counted apart", out)
	}
	// Far ahead, the numbers stay unusable until then: refused unless
	// --far says so.
	cli(2, "leases", "raise-marks", "--to", "now+1000h", "--machines", "41-42", "--yes")
	cli(0, "leases", "raise-marks", "--to", "now+2h", "--machines", "47-47", "--layout", "v1", "--yes", "--far")
	// Over the whole range on the running holder: the plan names the
	// holder it fences, and list shows the numbers that matter and one
	// line for the rest, not 1,024 rows.
	_, plan := cliErr(0, "leases", "raise-marks", "--to", "now+1m", "--machines", "0-1023", "--layout", "v1", "--yes")
	if !strings.Contains(plan, "machine 40: "+recs[0].Holder) || !strings.Contains(plan, "holders it fences: 1") {
		t.Errorf("raise-marks over the holder's number: plan %s; want it to name the holder fenced", plan)
	}
	list := cli(0, "leases", "list")
	if lines := strings.Count(list, "\n"); lines > 4 || !strings.Contains(list, "free numbers with marks up to") {
		t.Errorf("leases list after raise-marks over 0-1023 (%d lines):\n%.2000s\nwant the numbers that matter and one line for the rest", lines, list)
	}
	if all := cli(0, "leases", "list", "--all"); strings.Count(all, "\n") < 1024 {
		t.Errorf("leases list --all after raise-marks over 0-1023: %d lines, want every number", strings.Count(all, "\n"))
	}
	cli(2, "leases", "list", "--layout", "v2") // the fleet schedule has no v2
	cli(2, "leases", "frobnicate")
	cli(2, "leases", "show", "x")
	// A number or region no layout of the fleet has room for is a typo,
	// not a quarantine that reports success (v1: machines 0-1023, region 0).
	cli(2, "leases", "quarantine", "99999")
	cli(2, "leases", "release", "1024")
	cli(2, "leases", "show", "1024")
	cli(2, "leases", "list", "--region", "99")
	cli(2, "leases", "raise-marks", "--to", "yesterday")
	cli(2, "leases", "raise-marks", "--to", "now+10s") // shorter than etcd's restore window (40 s)
	s.stop(t)
	// With the service gone, the CLI says how to reach etcd.
	cli(1, "leases", "list")
}

// serve and leases on the lease tables: PostgreSQL and DynamoDB (dynalite),
// started by scripts/test (scripts/services/*.sh).
func TestE2ETableStores(t *testing.T) {
	t.Parallel() // mostly waits out the claims' notice windows on the lease tables: beside the other such tests
	forEachTableStore(t, "e2e", func(t *testing.T, flags []string) {
		run := func(args ...string) string {
			t.Helper()
			out, err := exec.Command(binary(t), append(args, flags...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("snowfence %v: %v\n%s", args, err, out)
			}
			return string(out)
		}
		run("leases", "init")
		// Again, spelt as in the runbook: a no-op.
		if out, err := exec.Command(binary(t), append([]string{"leases", "init", "--store", flags[1]}, flags[2:]...)...).CombinedOutput(); err != nil {
			t.Fatalf("leases init --store %s: %v\n%s", flags[1], err, out)
		}
		s := startService(t, t.TempDir(), append(flags, "--machines", "9-9")...)
		r := call(t, "POST", s.url+"/v1/ids?count=10", "", "")
		var b struct{ IDs []snowfence.ID }
		if err := json.Unmarshal([]byte(r.body), &b); r.status != 200 || err != nil || len(b.IDs) != 10 {
			t.Fatalf("POST: %d %s", r.status, r.body)
		}
		if d, _ := snowfence.Decode(b.IDs[0]); d.Machine != 9 {
			t.Errorf("machine %d, want 9", d.Machine)
		}
		var recs []struct {
			Machine int    `json:"machine"`
			Holder  string `json:"holder"`
			MarkMs  int64  `json:"mark_ms"`
		}
		if err := json.Unmarshal([]byte(run("leases", "show", "9", "--json")), &recs); err != nil || len(recs) != 1 || recs[0].Holder == "" {
			t.Fatalf("leases show 9: %+v, %v", recs, err)
		}
		// A table lease reserves minutes ahead: the table stores'
		// timings give a 5-minute lease, which is the reservation.
		if ahead := time.Until(time.UnixMilli(recs[0].MarkMs)); ahead < 4*time.Minute {
			t.Errorf("mark only %s ahead; table timings give 5 min", ahead)
		}
		s.stop(t)
		recs = nil // absent fields would keep the old values
		if err := json.Unmarshal([]byte(run("leases", "show", "9", "--json")), &recs); err != nil || recs[0].Holder != "" {
			t.Fatalf("after SIGTERM: %+v, %v; want released", recs, err)
		}
		// The next holder starts above the released mark.
		s2 := startService(t, t.TempDir(), append(flags, "--machines", "9-9")...)
		r = call(t, "POST", s2.url+"/v1/ids", "", "")
		var one struct{ ID snowfence.ID }
		if err := json.Unmarshal([]byte(r.body), &one); err != nil || one.ID <= b.IDs[9] {
			t.Fatalf("after restart: %s, want an ID above %d", r.body, b.IDs[9])
		}
		s2.stop(t)
	})
}

// serve and leases against an external etcd that requires TLS client
// certificates: --etcd-endpoints https://… with --etcd-ca/--etcd-cert/--etcd-key.
func TestE2EExternalEtcdTLS(t *testing.T) {
	t.Parallel()
	ep, files := etcdtest.StartTLS(t)
	tlsFlags := []string{"--etcd-endpoints", ep, "--etcd-ca", files.CA, "--etcd-cert", files.ClientCert, "--etcd-key", files.ClientKey}
	s := startService(t, t.TempDir(), append(tlsFlags, "--machines", "11-11")...)
	if s.url == "" {
		t.Fatal("no address")
	}
	r := call(t, "POST", s.url+"/v1/ids", "", "")
	var one struct{ ID snowfence.ID }
	if err := json.Unmarshal([]byte(r.body), &one); r.status != 200 || err != nil {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	if d, _ := snowfence.Decode(one.ID); d.Machine != 11 {
		t.Errorf("machine %d, want 11", d.Machine)
	}
	out, err := exec.Command(binary(t), append([]string{"leases", "show", "11", "--json"}, tlsFlags...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"machine":11`) || !strings.Contains(string(out), `"holder"`) {
		t.Fatalf("leases show over TLS: %v\n%s", err, out)
	}
	// Without the client certificate the CLI cannot reach it.
	if out, err := exec.Command(binary(t), "leases", "list", "--etcd-endpoints", ep, "--etcd-ca", files.CA, "--etcd-dial-timeout", "2s").CombinedOutput(); err == nil {
		t.Fatalf("leases list without a client certificate succeeded:\n%s", out)
	}
	s.stop(t)
}

// A client's spare connection, opened but never used, must not turn a
// graceful stop into a failure: net/http leaves such a connection open for
// 5 s, longer than this --shutdown-timeout.
func TestE2EShutdownWithUnusedConnection(t *testing.T) {
	t.Parallel()
	s := startService(t, t.TempDir(), "--shutdown-timeout", "1s", "--log-level", "info")
	if r := call(t, "POST", s.url+"/v1/ids", "", ""); r.status != http.StatusOK {
		t.Fatalf("POST /v1/ids: %d %s", r.status, r.body)
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The server accepts connections in order and registers each before it
	// accepts the next, so once a request on a connection dialed after c
	// is answered, the server knows c (otherwise c may still sit in the
	// kernel's queue when the stop begins, and the test shows nothing).
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(s.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s.stop(t) // fails the test unless serve exits 0
	if !strings.Contains(s.stderr.String(), "closed connections that had sent no request") {
		t.Errorf("no log line about the unused connection; stderr:\n%s", s.stderr)
	}
}
