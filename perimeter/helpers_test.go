package perimeter

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/testpki"
	"github.com/snowfence/snowfence/publicid"
	"github.com/snowfence/snowfence/server"
)

const (
	orders  = "spiffe://corp/orders"
	billing = "billing.corp" // a DNS-only caller
)

// defaultCallers lists orders and billing generously and denies the rest.
const defaultCallers = `{"default": "deny", "callers": {
	"spiffe://corp/orders": {"rate": 1000000, "burst": 100000},
	"billing.corp": {"rate": 1000000, "burst": 100000}}}`

// testPublicIDKeyset is the rig's public-ID keyset. Test key only.
const testPublicIDKeyset = `{"keys": {"1": {"status": "primary", "key": "8d2b4f6a1c0e3957b8a6d4c2e0f19b7a"}}}`

// rig is a real server on loopback behind a perimeter: mutual TLS, the
// callers file, a generator whose IDs are counted.
type rig struct {
	t                                      testing.TB
	dir                                    string
	ca                                     *testpki.CA
	p                                      *Perimeter
	gen                                    *snowfence.Generator
	ts                                     *httptest.Server
	reg                                    *prometheus.Registry
	clock                                  *fakeclock.Clock
	certFile, keyFile, caFile, callersFile string
}

// newRig starts the rig with callers as the callers file ("" for none) and
// polling off: tests call Reload.
func newRig(t testing.TB, callers string, gcfg func(*snowfence.Config)) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), ca: testpki.NewCA(t, "callers CA"), reg: prometheus.NewRegistry(),
		clock: fakeclock.New(time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC))}
	r.certFile, r.keyFile = r.ca.Server(t, testpki.Options{}).Write(t, r.dir, "server")
	r.caFile = r.ca.Write(t, r.dir, "ca")
	cfg := Config{CertFile: r.certFile, KeyFile: r.keyFile, ClientCAFile: r.caFile, NextProtos: []string{"http/1.1"},
		PollInterval: -1, Clock: r.clock, Registerer: r.reg}
	if callers != "" {
		r.callersFile = filepath.Join(r.dir, "callers.json")
		writeAtomic(t, r.callersFile, []byte(callers))
		cfg.CallersFile = r.callersFile
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	r.p = p
	gc := snowfence.Config{Lease: snowfence.Static(37, 0), ClockPolicy: snowfence.ClockOff}
	if gcfg != nil {
		gcfg(&gc)
	}
	if r.gen, err = snowfence.New(gc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.gen.Close() })
	keys, err := publicid.ParseKeyset([]byte(testPublicIDKeyset))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Generator: r.gen, Quota: p.Quota(), Registerer: prometheus.NewRegistry(),
		PublicIDKeys: keys, PublicIDOpeners: p, PublicIDSealers: p})
	if err != nil {
		t.Fatal(err)
	}
	r.ts = httptest.NewUnstartedServer(srv.Handler())
	r.ts.TLS = p.TLSConfig()
	r.ts.Config.ConnContext = p.ConnContext
	r.ts.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	r.ts.StartTLS()
	t.Cleanup(r.ts.Close)
	return r
}

// client returns an HTTP client presenting leaf (nil: no certificate) and
// trusting the rig's CA for the server.
func (r *rig) client(leaf *testpki.Leaf, mod func(*tls.Config)) *http.Client {
	cfg := &tls.Config{RootCAs: r.ca.Pool(), MinVersion: tls.VersionTLS13}
	if leaf != nil {
		cfg.Certificates = []tls.Certificate{leaf.TLS}
	}
	if mod != nil {
		mod(cfg)
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	r.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// caller returns a client certificate of the rig's CA for a SPIFFE ID
// (spiffe://…) or a DNS name.
func (r *rig) caller(id string) *testpki.Leaf {
	if strings.HasPrefix(id, "spiffe://") {
		return r.ca.Client(r.t, testpki.Options{URIs: []string{id}})
	}
	return r.ca.Client(r.t, testpki.Options{DNSNames: []string{id}})
}

// post sends POST target and returns the response (body read and closed).
func (r *rig) post(c *http.Client, target string) (*http.Response, string, error) {
	return r.send(c, http.MethodPost, target, "")
}

// send sends a request with body (a JSON body; "" for none) and returns
// the response (body read and closed).
func (r *rig) send(c *http.Client, method, target, body string) (*http.Response, string, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, r.ts.URL+target, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, err = io.Copy(&b, resp.Body)
	return resp, b.String(), err
}

func (r *rig) issued() uint64 { return r.gen.Stats().Issued }

// writeCallers replaces the callers file and reloads it.
func (r *rig) writeCallers(s string) error {
	r.t.Helper()
	writeAtomic(r.t, r.callersFile, []byte(s))
	return r.p.Reload()
}

// writeAtomic writes b to path by rename, as a careful deployment does.
func writeAtomic(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// writeInPlace overwrites path without a rename (a half-written file is
// visible), with a modification time that differs from the last one even
// on filesystems with coarse timestamps.
func writeInPlace(t testing.TB, path string, b []byte) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	mt := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func counter(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}
