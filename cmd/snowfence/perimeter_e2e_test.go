package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/client"
	"github.com/snowfence/snowfence/internal/testkit/testpki"
)

// The perimeter end to end: the real binary with mutual TLS, a callers file
// and an admin listener, every certificate made by the test
// (internal/testkit/testpki, crypto/x509 on this machine).

// perimeterFiles are a serve's TLS and callers files, and the CAs and caller
// certificates the test signs.
type perimeterFiles struct {
	dir                    string
	ca, other              *testpki.CA
	cert, key, caFile, cfg string
}

// Callers of the test: orders has a roomy quota, billing a tight one, and
// stranger is signed by the right CA but not listed (the default denies).
const testCallers = `{
	"default": "deny",
	"callers": {
		"spiffe://corp/orders":  {"rate": 1000000, "burst": 100000},
		"billing.corp":          {"rate": 2000, "burst": 1000}
	}
}`

func newPerimeterFiles(t *testing.T) *perimeterFiles {
	t.Helper()
	f := &perimeterFiles{dir: t.TempDir(), ca: testpki.NewCA(t, "callers CA"), other: testpki.NewCA(t, "another CA")}
	f.caFile = f.ca.Write(t, f.dir, "client-ca")
	f.cert, f.key = f.ca.Server(t, testpki.Options{CommonName: "ids.test"}).Write(t, f.dir, "server")
	f.cfg = filepath.Join(f.dir, "callers.json")
	if err := os.WriteFile(f.cfg, []byte(testCallers), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// flags are serve's perimeter flags for these files.
func (f *perimeterFiles) flags() []string {
	return []string{"--tls-cert", f.cert, "--tls-key", f.key, "--client-ca", f.caFile, "--callers", f.cfg,
		"--reload-every", "100ms", "--admin-listen", "127.0.0.1:0"}
}

// caller is a client TLS configuration for a certificate signed by ca.
func (f *perimeterFiles) caller(t *testing.T, ca *testpki.CA, o testpki.Options) *tls.Config {
	t.Helper()
	leaf := ca.Client(t, o)
	return &tls.Config{RootCAs: f.ca.Pool(), Certificates: []tls.Certificate{leaf.TLS}, ServerName: "127.0.0.1"}
}

// rotate writes a fresh server certificate and key from the same CA beside
// the old ones and renames them over (the key first, then the
// certificate, as a careless operator would: the perimeter swaps the pair
// only once both match). It returns the new certificate's serial.
func (f *perimeterFiles) rotate(t *testing.T, round int) string {
	t.Helper()
	leaf := f.ca.Server(t, testpki.Options{CommonName: fmt.Sprintf("ids.test rotation %d", round)})
	cert, key := leaf.Write(t, f.dir, fmt.Sprintf("next-%d", round))
	if err := os.Rename(key, f.key); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cert, f.cert); err != nil {
		t.Fatal(err)
	}
	return leaf.Cert.SerialNumber.String()
}

func tlsClient(cfg *tls.Config) *http.Client {
	// Each transport its own copy: net/http adds its protocols to the
	// TLS configuration it is given.
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg.Clone(), MaxIdleConnsPerHost: 8, ForceAttemptHTTP2: true}}
}

// issuedTotal is the service's count of IDs issued, from the admin listener.
func issuedTotal(t *testing.T, s *service) float64 {
	t.Helper()
	v := metricValue(t, s.admin, "snowfence_ids_issued_total")
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("snowfence_ids_issued_total %q: %v", v, err)
	}
	return n
}

// TestE2EMutualTLS: a known caller gets IDs (and {} works on POST
// /v1/ids); a certificate from another CA, an expired one, one the callers
// file does not list, and none at all are refused at the handshake and
// issue nothing; health and metrics answer on the plain admin listener.
func TestE2EMutualTLS(t *testing.T) {
	t.Parallel()
	f := newPerimeterFiles(t)
	s := startService(t, t.TempDir(), f.flags()...)
	if !strings.HasPrefix(s.url, "https://") || s.admin == "" {
		t.Fatalf("serve with TLS and an admin listener printed %q and admin %q", s.url, s.admin)
	}
	waitAdminReady(t, s)

	orders := tlsClient(f.caller(t, f.ca, testpki.Options{URIs: []string{"spiffe://corp/orders"}}))
	defer orders.CloseIdleConnections()
	for _, c := range []struct{ name, contentType, body string }{
		{"no body", "", ""},
		{"{} as JSON", "application/json", "{}"},
		{"null as JSON (what a generated client sends)", "application/json", "null"},
	} {
		req, _ := http.NewRequest("POST", s.url+"/v1/ids", strings.NewReader(c.body))
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		resp, err := orders.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"id_num"`) {
			t.Errorf("POST /v1/ids, %s, as orders: %d %s", c.name, resp.StatusCode, b)
		}
	}
	if _, err := orders.Get(s.url + "/healthz"); err != nil {
		t.Fatal(err)
	} else if r := call(t, "GET", s.admin+"/healthz", "", ""); r.status != 200 {
		t.Errorf("admin /healthz: %d %s", r.status, r.body)
	}

	before := issuedTotal(t, s)
	refused := []struct {
		name string
		cfg  *tls.Config
	}{
		{"another CA", f.caller(t, f.other, testpki.Options{URIs: []string{"spiffe://corp/orders"}})},
		{"expired", f.caller(t, f.ca, testpki.Options{URIs: []string{"spiffe://corp/orders"},
			NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})},
		{"not in the callers file", f.caller(t, f.ca, testpki.Options{URIs: []string{"spiffe://corp/stranger"}})},
		{"no certificate", &tls.Config{RootCAs: f.ca.Pool(), ServerName: "127.0.0.1"}},
	}
	for _, c := range refused {
		hc := tlsClient(c.cfg)
		for _, path := range []string{"/v1/ids", "/v1/ids?count=10"} {
			resp, err := hc.Post(s.url+path, "", nil)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Errorf("%s: POST %s answered %d %s; want the handshake refused", c.name, path, resp.StatusCode, b)
				continue
			}
			var ce *tls.CertificateVerificationError
			if errors.As(err, &ce) {
				t.Errorf("%s: the client refused the server (%v); the test means the server to refuse the client", c.name, err)
			}
		}
		hc.CloseIdleConnections()
	}
	if after := issuedTotal(t, s); after != before {
		t.Errorf("IDs issued went from %v to %v across refused handshakes", before, after)
	}
	if v := metricValue(t, s.admin, `snowfence_caller_refused_total{at="handshake",caller="(unlisted)"}`); v != "2" {
		// Twice: the two POSTs of the caller the file does not list.
		t.Errorf(`snowfence_caller_refused_total for (unlisted) at the handshake = %q, want "2"`, v)
	}
	// Plain HTTP to the TLS port is not an ID request either.
	if resp, err := http.Post(strings.Replace(s.url, "https://", "http://", 1)+"/v1/ids", "", nil); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("plain HTTP to the TLS listener minted an ID")
		}
	}
	if after := issuedTotal(t, s); after != before {
		t.Errorf("IDs issued went from %v to %v after plain HTTP", before, after)
	}
	s.stop(t)
}

// waitAdminReady polls the admin listener's /readyz (bounded).
func waitAdminReady(t *testing.T, s *service) {
	t.Helper()
	waitReady(t, s.admin, 20*time.Second)
}

// TestE2ECertificateRotationUnderLoad: the server's certificate is replaced
// five times while callers post on kept-alive and on new connections; no
// request fails, and new connections see each new certificate.
func TestE2ECertificateRotationUnderLoad(t *testing.T) {
	t.Parallel()
	f := newPerimeterFiles(t)
	s := startService(t, t.TempDir(), f.flags()...)
	waitAdminReady(t, s)
	cfg := f.caller(t, f.ca, testpki.Options{URIs: []string{"spiffe://corp/orders"}})

	stop := make(chan struct{})
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keep := i%2 == 0 // half keep their connections, half dial anew
			hc := tlsClient(cfg)
			defer hc.CloseIdleConnections()
			for n := 0; n < 20000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if !keep {
					hc.CloseIdleConnections()
				}
				resp, err := hc.Post(s.url+"/v1/ids?count=10", "", nil)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
			}
		}()
	}
	for round := range 5 {
		want := f.rotate(t, round)
		deadline := time.Now().Add(10 * time.Second)
		for servedSerial(t, cfg, s.url) != want {
			if time.Now().After(deadline) {
				t.Fatalf("rotation %d: new connections still get the old certificate after 10 s", round)
			}
			time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d requests under five rotations, %d failed", ok.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Errorf("%d requests failed across the rotations; the first: %v", failed.Load(), firstErr.Load())
	}
	if ok.Load() == 0 {
		t.Errorf("no request succeeded")
	}
	if v := metricValue(t, s.admin, `snowfence_perimeter_reloads_total{file="tls-cert",result="ok"}`); v == "" || v == "0" {
		t.Errorf("snowfence_perimeter_reloads_total for the certificate = %q", v)
	}
	s.stop(t)
}

// servedSerial is the serial of the certificate a new connection gets.
func servedSerial(t *testing.T, cfg *tls.Config, url string) string {
	t.Helper()
	c := cfg.Clone()
	var serial string
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		serial = cs.PeerCertificates[0].SerialNumber.String()
		return nil
	}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), c)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	conn.Close()
	return serial
}

// TestE2EQuotaAndClientBackoff: billing (2,000 IDs/s, burst 1,000) asking
// for a batch its bucket does not hold gets 429 with Retry-After and the
// RateLimit fields, and nothing is issued; the Go client asking for 6,000
// IDs backs off on each 429 and gets them all, about as fast as the quota
// allows.
func TestE2EQuotaAndClientBackoff(t *testing.T) {
	t.Parallel()
	f := newPerimeterFiles(t)
	s := startService(t, t.TempDir(), f.flags()...)
	waitAdminReady(t, s)
	billing := f.caller(t, f.ca, testpki.Options{DNSNames: []string{"billing.corp"}})
	hc := tlsClient(billing)
	defer hc.CloseIdleConnections()

	// Empty the bucket, then ask again at once.
	var got429 *http.Response
	for range 5 {
		resp, err := hc.Post(s.url+"/v1/ids?count=1000", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			got429 = resp
			break
		}
		if resp.StatusCode != 200 {
			t.Fatalf("POST as billing: %d", resp.StatusCode)
		}
	}
	if got429 == nil {
		t.Fatalf("five batches of 1,000 within moments at 2,000 IDs/s with a burst of 1,000 were never refused")
	}
	ra, err := strconv.Atoi(got429.Header.Get("Retry-After"))
	if err != nil || ra < 1 {
		t.Errorf("429 Retry-After %q: want whole seconds ≥ 1", got429.Header.Get("Retry-After"))
	}
	if p := got429.Header.Get("RateLimit-Policy"); !strings.HasPrefix(p, `"ids";q=1000;w=`) {
		t.Errorf("429 RateLimit-Policy %q", p)
	}
	if l := got429.Header.Get("RateLimit"); !strings.HasPrefix(l, `"ids";r=`) {
		t.Errorf("429 RateLimit %q", l)
	}
	if v := metricValue(t, s.admin, `snowfence_caller_requests_throttled_total{caller="billing.corp"}`); v == "" || v == "0" {
		t.Errorf("throttled requests of billing.corp = %q", v)
	}

	// The client: 6,000 IDs in batches of up to 1,000 at 2,000 IDs/s.
	c, err := client.New(client.Config{Endpoints: []string{s.url}, HealthURLs: []string{s.admin + "/healthz"}, TLS: billing,
		MaxAttempts: 50, MaxRetryAfter: 2 * time.Second, MinRefill: 1000, MaxBuffer: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	var ids []snowfence.ID
	for len(ids) < 6000 {
		got, err := c.NextN(ctx, 1000)
		if err != nil {
			t.Fatalf("client NextN after %d IDs: %v", len(ids), err)
		}
		ids = append(ids, got...)
	}
	took := time.Since(began)
	seen := map[snowfence.ID]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("the client handed out %d twice", id)
		}
		seen[id] = true
	}
	throttled := metricValue(t, s.admin, `snowfence_caller_requests_throttled_total{caller="billing.corp"}`)
	t.Logf("6,000 IDs through the client in %s at 2,000 IDs/s; billing.corp throttled %s times in all", took.Round(time.Millisecond), throttled)
	if took < 2*time.Second {
		t.Errorf("6,000 IDs at 2,000 IDs/s with a burst of 1,000 took only %s: the quota did not hold", took)
	}
	s.stop(t)
}
