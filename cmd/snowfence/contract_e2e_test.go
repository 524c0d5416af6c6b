package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/internal/testkit/freeport"
)

// specPath is api/openapi.json, from this package's directory.
const specPath = "../../api/openapi.json"

// prism is a running Stoplight Prism in proxy mode with --errors in front
// of one listener of a live serve: it checks each request against
// api/openapi.json and each response of the server, and answers a violation
// with an error of its own (application/problem+json) as well as logging
// it.
type prism struct {
	url string
	mu  sync.Mutex
	log bytes.Buffer
}

func (p *prism) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

func (p *prism) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// startPrism starts prism proxy on a free loopback port in front of
// upstream, and waits (bounded) for it to listen; with validateRequests
// false it forwards requests that break the description too
// (--validate-request=false), so that the server's answer to them is
// checked. It may run on any goroutine: it reports failure as an error.
func startPrism(t *testing.T, dir, upstream string, validateRequests bool) (*prism, error) {
	ports, err := freeport.Loopback(1)
	if err != nil {
		return nil, err
	}
	args := []string{"proxy", specPath, upstream, "--errors", "--host", "127.0.0.1", "--port", strconv.Itoa(ports[0]), "--cors=false"}
	if !validateRequests {
		args = append(args, "--validate-request=false")
	}
	cmd := exec.Command(filepath.Join(dir, "node_modules", ".bin", "prism"), args...)
	p := &prism{url: "http://127.0.0.1:" + strconv.Itoa(ports[0])}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
		<-done
	})
	listening := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		said := false
		for sc.Scan() {
			fmt.Fprintln(p, sc.Text())
			if !said && strings.Contains(sc.Text(), "Prism is listening on") {
				said = true
				close(listening)
			}
		}
	}()
	select {
	case <-listening:
		return p, nil
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("prism proxy %s did not listen within 60 s:\n%s", upstream, p.text())
	}
}

// violations are the lines of the log that report a violation, each after
// the request it was found in.
func (p *prism) violations() []string {
	var out []string
	last := ""
	for _, line := range strings.Split(p.text(), "\n") {
		if i := strings.Index(line, "[HTTP SERVER] "); i >= 0 {
			last = line[i+len("[HTTP SERVER] "):]
			if j := strings.Index(last, " ℹ"); j >= 0 {
				last = last[:j]
			}
		}
		if strings.Contains(line, "Violation") || strings.Contains(line, "errors#VIOLATIONS") {
			out = append(out, last+": "+strings.TrimSpace(line))
		}
	}
	return out
}

// exchange is one request of the traffic set and what it must get.
type exchange struct {
	method, path, contentType, body string
	// want is the status the server answers (and, for a 405, Prism: a
	// method the description does not give the path, which Prism answers
	// itself).
	want int
	// invalid marks a request that breaks the description (a count out of
	// range, a body that is not the schema's, a Content-Type it does not
	// list): Prism with request validation must refuse it itself, and
	// Prism without forwards it, to check the server's answer.
	invalid bool
	// direct, if set, is the server to send the request to itself, for
	// the one kind of answer Prism cannot check: an upstream 501, which
	// Prism's proxy replaces with a mock of its own (the description's
	// example) instead of validating it. TestOpenAPIStatuses (package
	// server) checks that answer's body.
	direct string
}

// sent is what happened to one exchange through Prism.
type sent struct {
	operation string
	status    int
}

// drive sends each exchange through strict (validating requests) and, for
// invalid ones, through lenient too, and returns the documented
// (operation, status) pairs they exercised.
func drive(t *testing.T, ops *specOps, strict, lenient *prism, xs []exchange) []sent {
	t.Helper()
	var out []sent
	for _, x := range xs {
		name := fmt.Sprintf("%s %s %.40q (Content-Type %q)", x.method, x.path, x.body, x.contentType)
		op := ops.operation(x.method, x.path)
		if x.direct != "" {
			if r := send(t, x.direct, x); r.status != x.want {
				t.Errorf("%s: status %d, body %.300s; want %d", name, r.status, r.body, x.want)
			} else {
				out = append(out, sent{op, r.status})
			}
			continue
		}
		r := send(t, strict.url, x)
		prismType := prismError(r)
		if x.method == http.MethodHead && strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
			// A HEAD answer has no body to name the error by.
			prismType = "HEAD answered by Prism itself: NO_METHOD_MATCHED_ERROR"
		}
		switch {
		case x.want == http.StatusMethodNotAllowed:
			if r.status != http.StatusMethodNotAllowed || !strings.HasSuffix(prismType, "NO_METHOD_MATCHED_ERROR") {
				t.Errorf("%s through Prism: %d %s %.300s; want Prism's 405: the description gives the path no such method", name, r.status, prismType, r.body)
				continue
			}
			op = ops.operation("", x.path)
		case x.invalid:
			if prismType == "" {
				t.Errorf("%s through Prism: %d %.300s; Prism forwarded a request marked as breaking the description", name, r.status, r.body)
				continue
			}
			if lenient == nil {
				t.Fatalf("%s: an invalid request with no lenient Prism to forward it", name)
			}
			r = send(t, lenient.url, x)
			if p := prismError(r); p != "" {
				t.Errorf("%s through Prism without request validation: %d %s %.500s", name, r.status, p, r.body)
				continue
			}
		case prismType != "":
			t.Errorf("%s through Prism: %d %s %.600s", name, r.status, prismType, r.body)
			continue
		}
		if r.status != x.want {
			t.Errorf("%s through Prism: status %d, body %.300s; want %d", name, r.status, r.body, x.want)
			continue
		}
		if op == "" {
			t.Errorf("%s: no operation of the description takes this path", name)
			continue
		}
		out = append(out, sent{op, r.status})
	}
	return out
}

// send makes one request of x at base.
func send(t *testing.T, base string, x exchange) reply {
	t.Helper()
	var body io.Reader
	if x.body != "" {
		body = strings.NewReader(x.body)
	}
	req, err := http.NewRequest(x.method, base+x.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if x.contentType != "" {
		req.Header.Set("Content-Type", x.contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", x.method, base+x.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// prismError returns the type of an error Prism answered itself ("" for an
// answer of the server).
func prismError(r reply) string {
	if !strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
		return ""
	}
	var p struct {
		Type string `json:"type"`
	}
	json.Unmarshal([]byte(r.body), &p)
	if !strings.Contains(p.Type, "stoplight.io/prism/errors#") {
		return ""
	}
	return p.Type
}

// specOps is the operations of api/openapi.json with their documented
// statuses.
type specOps struct {
	paths []specPathOps
}

type specPathOps struct {
	re  *regexp.Regexp
	ops map[string]specOp // by lower-case method
}

type specOp struct {
	id       string
	statuses []int
}

func loadSpecOps(t *testing.T) *specOps {
	t.Helper()
	b, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string                     `json:"operationId"`
			Responses   map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	s := &specOps{}
	for path, methods := range doc.Paths {
		re := "^" + regexp.MustCompile(`\\\{[a-z]+\\\}`).ReplaceAllString(regexp.QuoteMeta(path), `[^/]+`) + "$"
		po := specPathOps{re: regexp.MustCompile(re), ops: map[string]specOp{}}
		for m, op := range methods {
			o := specOp{id: op.OperationID}
			for code := range op.Responses {
				n, err := strconv.Atoi(code)
				if err != nil {
					t.Fatalf("%s %s: response %q", m, path, code)
				}
				o.statuses = append(o.statuses, n)
			}
			po.ops[m] = o
		}
		s.paths = append(s.paths, po)
	}
	return s
}

// operation returns the operationId of method and path (any method's when
// method is "": the description has one per path).
func (s *specOps) operation(method, path string) string {
	path, _, _ = strings.Cut(path, "?")
	for _, p := range s.paths {
		if !p.re.MatchString(path) {
			continue
		}
		for m, op := range p.ops {
			if method == "" || strings.EqualFold(m, method) {
				return op.id
			}
		}
	}
	return ""
}

// documented lists "operation status" for every documented response.
func (s *specOps) documented() []string {
	var out []string
	for _, p := range s.paths {
		for _, op := range p.ops {
			for _, code := range op.statuses {
				out = append(out, fmt.Sprintf("%s %d", op.id, code))
			}
		}
	}
	slices.Sort(out)
	return out
}

// writeFile writes a test file, failing the test on error.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitStatus polls url (directly, not through Prism) until it answers
// method with want: the callers file's reload is polled by the server, and
// has no event a test can wait on.
func waitStatus(t *testing.T, method, url, contentType, body string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := call(t, method, url, contentType, body)
		if r.status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s: still %d %.200s after 30 s; want %d", method, url, r.status, r.body, want)
		}
		time.Sleep(50 * time.Millisecond) // polling a process's file reload
	}
}

// TestE2EPrismProxy puts Stoplight Prism, in proxy mode with --errors, in
// front of live serve processes — the main and admin listeners of one
// (--admin-listen), as its callers file moves from a generous quota that
// grants opening and sealing, to one without sealing (POST /v1/public-ids
// 403, :mint still 200), to a spent quota, to "deny"; a spare waiting for a machine number (every route
// that needs one answers 503 starting); one without a public-ID keyset
// (501) — and sends a traffic set that reaches every documented response of
// every operation of api/openapi.json. It fails on any violation Prism
// finds, in a request or in a response, and on any documented response the
// traffic did not reach.
func TestE2EPrismProxy(t *testing.T) {
	t.Parallel()
	heavy(t)
	began := time.Now()
	dir := npmTool(t, "prism-5.16.0", "prism")
	ops := loadSpecOps(t)
	tmp := t.TempDir()

	// a: both listeners, a keyset, a callers file to change.
	keys := filepath.Join(tmp, "keys.json")
	writeFile(t, keys, `{"keys": {"2": {"status": "primary", "key": "000102030405060708090a0b0c0d0e0f"}}}`)
	callers := filepath.Join(tmp, "callers.json")
	generous := `{"default": {"rate": 100000, "burst": 10000, "open_public_ids": true, "seal_public_ids": true}, "callers": {}}`
	writeFile(t, callers, generous)
	etcd := etcdtest.Start(t, 1)
	store := []string{"--etcd-endpoints", strings.Join(etcd.Endpoints(), ","), "--machines", "5-5"}
	a := startService(t, filepath.Join(tmp, "a"), append(store, "--admin-listen", "127.0.0.1:0",
		"--public-id-keys", keys, "--callers", callers, "--reload-every", "100ms")...)
	c := startService(t, filepath.Join(tmp, "c"))
	// The spare, once a holds 5 (startService returns once a serves):
	// it waits for 5 to free.
	b := startService(t, filepath.Join(tmp, "b"), append(store, "--public-id-keys", keys)...)
	waitStatus(t, "GET", c.url+"/readyz", "", "", http.StatusOK)

	upstreams := []struct {
		url      string
		validate bool
	}{{a.url, true}, {a.admin, true}, {a.url, false}, {a.admin, false}, {b.url, true}, {c.url, true}}
	prisms := make([]*prism, len(upstreams))
	errs := make([]error, len(upstreams))
	var wg sync.WaitGroup
	for i, u := range upstreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prisms[i], errs[i] = startPrism(t, dir, u.url, u.validate)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	pa, paAdmin, paLenient, paAdminLenient, pb, pc := prisms[0], prisms[1], prisms[2], prisms[3], prisms[4], prisms[5]
	t.Logf("serve ×3 and prism ×%d up in %s", len(prisms), time.Since(began).Round(time.Millisecond))

	const id = "97301141913751557"
	js := "application/json"
	// Over the 4 KiB limit. Prism forwards a body it parsed, without its
	// white space, so the size is in a member the schema does not have,
	// and only Prism without request validation forwards it.
	big := `{"count":1,"pad":"` + strings.Repeat("x", 5000) + `"}`
	// Seal one ID through Prism, to open it.
	r := send(t, pa.url, exchange{method: "POST", path: "/v1/public-ids", contentType: js, body: `{"type":"order","ids":["` + id + `"]}`})
	var sealed struct {
		PublicIDs []string `json:"public_ids"`
	}
	if err := jsonUnmarshal(r.body, &sealed); r.status != 200 || err != nil || len(sealed.PublicIDs) != 1 {
		t.Fatalf("seal through Prism: %d %s", r.status, r.body)
	}
	pid := sealed.PublicIDs[0]

	var got []sent
	// a's main listener, generous quota.
	got = append(got, drive(t, ops, pa, paLenient, []exchange{
		{method: "POST", path: "/v1/ids", want: 200},
		{method: "POST", path: "/v1/ids", contentType: js, body: `{}`, want: 200},
		{method: "POST", path: "/v1/ids", contentType: js, body: `null`, want: 200},
		{method: "POST", path: "/v1/ids?count=3", want: 200},
		{method: "POST", path: "/v1/ids?count=0", want: 400, invalid: true},
		{method: "POST", path: "/v1/ids", contentType: js, body: `{"count":3}`, want: 400, invalid: true},
		{method: "POST", path: "/v1/ids", contentType: js, body: big, want: 413, invalid: true},
		{method: "POST", path: "/v1/ids", body: `{}`, want: 415, invalid: true},
		{method: "GET", path: "/v1/ids", want: 405},
		{method: "HEAD", path: "/v1/ids/" + id + "/decode", want: 405},
		{method: "POST", path: "/v1/ids:batch", contentType: js, body: `{"count":3}`, want: 200},
		{method: "POST", path: "/v1/ids:batch?count=3", want: 200},
		{method: "POST", path: "/v1/ids:batch?count=3", contentType: js, body: `{}`, want: 200},
		{method: "POST", path: "/v1/ids:batch?count=3", contentType: js, body: `{"count":3}`, want: 400},
		{method: "POST", path: "/v1/ids:batch", contentType: js, body: `{"count":"3"}`, want: 400, invalid: true},
		{method: "POST", path: "/v1/ids:batch", contentType: js, body: big, want: 413, invalid: true},
		{method: "POST", path: "/v1/ids:batch", contentType: "text/plain", body: `{"count":3}`, want: 415, invalid: true},
		{method: "GET", path: "/v1/ids:batch", want: 405},
		{method: "GET", path: "/v1/ids/" + id + "/decode", want: 200},
		{method: "GET", path: "/v1/ids/9223372036854775807/decode", want: 200},
		{method: "GET", path: "/v1/ids/x/decode", want: 400, invalid: true},
		{method: "POST", path: "/v1/ids/" + id + "/decode", want: 405},
		{method: "POST", path: "/v1/uuids", want: 200},
		{method: "POST", path: "/v1/uuids?count=3", contentType: js, body: `null`, want: 200},
		{method: "POST", path: "/v1/uuids?count=1001", want: 400, invalid: true},
		{method: "POST", path: "/v1/uuids", contentType: js, body: big, want: 413, invalid: true},
		{method: "POST", path: "/v1/uuids", body: `{}`, want: 415, invalid: true},
		{method: "GET", path: "/v1/uuids", want: 405},
		{method: "POST", path: "/v1/public-ids", contentType: js, body: `{"type":"order","ids":["` + id + `","1"]}`, want: 200},
		{method: "POST", path: "/v1/public-ids", contentType: js, body: `{"type":"Order","ids":["1"]}`, want: 400, invalid: true},
		{method: "POST", path: "/v1/public-ids", contentType: js, body: `{"type":"order","ids":["1"],"pad":"` + strings.Repeat("x", 70000) + `"}`, want: 413, invalid: true},
		{method: "POST", path: "/v1/public-ids", contentType: "text/plain", body: `{"type":"order","ids":["1"]}`, want: 415, invalid: true},
		{method: "GET", path: "/v1/public-ids", want: 405},
		{method: "POST", path: "/v1/public-ids:mint", contentType: js, body: `{"type":"order","count":3}`, want: 200},
		{method: "POST", path: "/v1/public-ids:mint", contentType: js, body: `{"type":"order","count":1001}`, want: 400, invalid: true},
		{method: "POST", path: "/v1/public-ids:mint?count=3", contentType: js, body: `{"type":"order","count":3}`, want: 400},
		{method: "POST", path: "/v1/public-ids:mint", contentType: js, body: `{"type":"order","count":1,"pad":"` + strings.Repeat("x", 5000) + `"}`, want: 413, invalid: true},
		{method: "POST", path: "/v1/public-ids:mint", contentType: "text/plain", body: `{"type":"order","count":1}`, want: 415, invalid: true},
		{method: "POST", path: "/v1/public-ids:mint", body: `{"type":"order","count":1}`, want: 415, invalid: true},
		{method: "GET", path: "/v1/public-ids:mint", want: 405},
		{method: "GET", path: "/v1/public-ids/" + pid, want: 200},
		{method: "GET", path: "/v1/public-ids/order_x", want: 400, invalid: true},
		{method: "GET", path: "/v1/public-ids/order_20000000000000000000000000a", want: 404},
		{method: "POST", path: "/v1/public-ids/" + pid, want: 405},
		{method: "GET", path: "/openapi.json", want: 200},
		{method: "POST", path: "/openapi.json", want: 405},
		// The admin listener's operations, asked of the main one.
		{method: "GET", path: "/healthz", want: 404},
		{method: "GET", path: "/readyz", want: 404},
		{method: "GET", path: "/livez", want: 404},
		{method: "GET", path: "/metrics", want: 404},
		{method: "GET", path: "/", want: 404},
		{method: "GET", path: "/status/status.js", want: 404},
		{method: "GET", path: "/v1/status", want: 404},
		{method: "GET", path: "/v1/status/decode/" + id, want: 404},
	})...)
	// a's admin listener.
	got = append(got, drive(t, ops, paAdmin, paAdminLenient, []exchange{
		{method: "GET", path: "/healthz", want: 200},
		{method: "POST", path: "/healthz", want: 405},
		{method: "GET", path: "/readyz", want: 200},
		{method: "POST", path: "/readyz", want: 405},
		{method: "GET", path: "/livez", want: 200},
		{method: "POST", path: "/livez", want: 405},
		{method: "GET", path: "/metrics", want: 200},
		{method: "POST", path: "/metrics", want: 405},
		{method: "GET", path: "/", want: 200},
		{method: "POST", path: "/", want: 405},
		{method: "GET", path: "/status/status.js", want: 200},
		{method: "GET", path: "/status/status.css", want: 200},
		{method: "GET", path: "/status/icon.svg", want: 200},
		{method: "GET", path: "/status/index.html", want: 404, invalid: true},
		{method: "POST", path: "/status/status.js", want: 405},
		{method: "GET", path: "/v1/status", want: 200},
		{method: "POST", path: "/v1/status", want: 405},
		{method: "GET", path: "/v1/status/decode/" + id, want: 200},
		{method: "GET", path: "/v1/status/decode/x", want: 400, invalid: true},
		{method: "POST", path: "/v1/status/decode/" + id, want: 405},
		// The main listener's operations, asked of the admin one.
		{method: "POST", path: "/v1/ids", want: 404},
		{method: "POST", path: "/v1/ids:batch?count=2", want: 404},
		{method: "GET", path: "/v1/ids/" + id + "/decode", want: 404},
		{method: "POST", path: "/v1/uuids", want: 404},
		{method: "POST", path: "/v1/public-ids", contentType: js, body: `{"type":"order","ids":["1"]}`, want: 404},
		{method: "POST", path: "/v1/public-ids:mint", contentType: js, body: `{"type":"order","count":1}`, want: 404},
		{method: "GET", path: "/v1/public-ids/" + pid, want: 404},
		{method: "GET", path: "/openapi.json", want: 404},
	})...)

	// Sealing IDs of one's choosing no longer granted: sealing is a 403
	// that names the permission, minting them sealed is still for every
	// caller.
	writeFile(t, callers, `{"default": {"rate": 100000, "burst": 10000, "open_public_ids": true}, "callers": {}}`)
	waitStatus(t, "POST", a.url+"/v1/public-ids", js, `{"type":"order","ids":["1"]}`, http.StatusForbidden)
	got = append(got, drive(t, ops, pa, nil, []exchange{
		{method: "POST", path: "/v1/public-ids", contentType: js, body: `{"type":"order","ids":["1"]}`, want: 403},
		{method: "POST", path: "/v1/public-ids:mint", contentType: js, body: `{"type":"order","count":2}`, want: 200},
	})...)
	r = send(t, pa.url, exchange{method: "POST", path: "/v1/public-ids", contentType: js, body: `{"type":"order","ids":["1"]}`})
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "seal_public_ids") {
		t.Errorf("seal by a caller without seal_public_ids, through Prism: %d %.300s; want 403 naming seal_public_ids", r.status, r.body)
	}

	// The quota spent: a burst of 1,000 at 1 ID/s, drained by one batch.
	writeFile(t, callers, `{"default": {"rate": 1, "burst": 1000, "seal_public_ids": true}, "callers": {}}`)
	waitStatus(t, "GET", a.url+"/v1/public-ids/"+pid, "", "", http.StatusForbidden) // open_public_ids is gone
	waitStatus(t, "POST", a.url+"/v1/ids?count=1000", "", "", http.StatusTooManyRequests)
	got = append(got, drive(t, ops, pa, nil, []exchange{
		{method: "POST", path: "/v1/ids?count=100", want: 429},
		{method: "POST", path: "/v1/ids:batch", contentType: js, body: `{"count":100}`, want: 429},
		{method: "POST", path: "/v1/uuids?count=100", want: 429},
		{method: "POST", path: "/v1/public-ids", contentType: js, body: `{"type":"order","ids":["1","2","3","4","5","6","7","8","9","10"]}`, want: 429},
		{method: "POST", path: "/v1/public-ids:mint", contentType: js, body: `{"type":"order","count":10}`, want: 429},
		{method: "GET", path: "/v1/public-ids/" + pid, want: 403},
	})...)
	// Every caller denied.
	writeFile(t, callers, `{"default": "deny", "callers": {}}`)
	waitStatus(t, "POST", a.url+"/v1/ids", "", "", http.StatusForbidden)
	got = append(got, drive(t, ops, pa, nil, []exchange{
		{method: "POST", path: "/v1/ids", want: 403},
		{method: "POST", path: "/v1/ids:batch?count=2", want: 403},
		{method: "POST", path: "/v1/uuids", want: 403},
		{method: "POST", path: "/v1/public-ids", contentType: js, body: `{"type":"order","ids":["1"]}`, want: 403},
		{method: "POST", path: "/v1/public-ids:mint", contentType: js, body: `{"type":"order","count":1}`, want: 403},
	})...)

	// b, a spare waiting for machine 5: every route that needs a number
	// answers 503 starting.
	got = append(got, drive(t, ops, pb, nil, []exchange{
		{method: "POST", path: "/v1/ids", want: 503},
		{method: "POST", path: "/v1/ids:batch?count=2", want: 503},
		{method: "GET", path: "/v1/ids/" + id + "/decode", want: 503},
		{method: "POST", path: "/v1/uuids", want: 503},
		{method: "POST", path: "/v1/public-ids", contentType: js, body: `{"type":"order","ids":["1"]}`, want: 503},
		{method: "POST", path: "/v1/public-ids:mint", contentType: js, body: `{"type":"order","count":1}`, want: 503},
		{method: "GET", path: "/v1/public-ids/" + pid, want: 503},
		{method: "GET", path: "/healthz", want: 503},
		{method: "GET", path: "/readyz", want: 503},
		{method: "GET", path: "/livez", want: 200}, // a spare waiting is alive
		{method: "GET", path: "/v1/status/decode/" + id, want: 503},
		{method: "GET", path: "/metrics", want: 200},
		{method: "GET", path: "/v1/status", want: 200},
	})...)
	// c, without a keyset: public IDs are not enabled (501), which Prism's
	// proxy mocks instead of checking; c's other routes are checked.
	got = append(got, drive(t, ops, pc, nil, []exchange{
		{method: "POST", path: "/v1/public-ids", contentType: js, body: `{"type":"order","ids":["1"]}`, want: 501, direct: c.url},
		{method: "POST", path: "/v1/public-ids:mint", contentType: js, body: `{"type":"order","count":1}`, want: 501, direct: c.url},
		{method: "GET", path: "/v1/public-ids/" + pid, want: 501, direct: c.url},
		{method: "POST", path: "/v1/ids", want: 200},
		{method: "GET", path: "/healthz", want: 200},
	})...)

	for _, p := range prisms {
		for _, v := range p.violations() {
			t.Errorf("Prism in front of %s: %s", p.url, v)
		}
	}
	reached := map[string]bool{}
	for _, s := range got {
		reached[fmt.Sprintf("%s %d", s.operation, s.status)] = true
	}
	for _, d := range ops.documented() {
		if why, ok := unreachable[d]; ok {
			if reached[d] {
				t.Errorf("%s was reached through Prism, but the test names it unreachable (%s): take it off the list", d, why)
			}
			continue
		}
		if !reached[d] {
			t.Errorf("%s is documented but the traffic set did not reach it through Prism", d)
		}
	}
	for d := range unreachable {
		if !slices.Contains(ops.documented(), d) {
			t.Errorf("%s is named unreachable but is not documented", d)
		}
	}
	t.Logf("%d exchanges through Prism reached all %d documented responses in %s", len(got), len(ops.documented()), time.Since(began).Round(time.Millisecond))
}

// unreachable are the documented responses no real process can be made to
// give, with where they are produced instead: TestE2EPrismProxy requires
// every other one.
var unreachable = map[string]string{
	// Every store call of the keeper is bounded by its request timeout,
	// and every store client honours it: only a bug wedges the loop.
	"live 503": "a wedged lease keeper's loop; server's TestOpenAPIStatuses checks the answer against the description, and lease's TestKeeperStalledWhileAStoreCallHangs the keeper's report",
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
