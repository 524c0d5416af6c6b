package perimeter

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/testpki"
)

// postReused is post that also reports whether the request went on a
// connection the client had used before.
func (r *rig) postReused(c *http.Client) (resp *http.Response, body string, reused bool, err error) {
	r.t.Helper()
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, r.ts.URL+"/v1/ids", nil)
	if err != nil {
		r.t.Fatal(err)
	}
	resp, err = c.Do(req)
	if err != nil {
		return nil, "", reused, err
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, err = io.Copy(&b, resp.Body)
	return resp, b.String(), reused, err
}

// TestRemovedCARestored: on one kept-alive connection, a request after the
// caller's CA left the bundle gets 403 forbidden, counted at="request"
// under the caller; once the CA is back, the same connection mints again.
func TestRemovedCARestored(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	c := r.client(r.caller(orders), nil)
	if resp, _, _, err := r.postReused(c); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %v %v", resp, err)
	}
	other := testpki.NewCA(t, "another CA")
	writeAtomic(t, r.caFile, other.CertPEM)
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	refused := r.p.metrics.refused.WithLabelValues(orders, "request")
	before, refusedBefore := r.issued(), counter(t, refused)
	for i := range 2 { // the second from the cache of the first's verification
		resp, body, reused, err := r.postReused(c)
		if err != nil {
			t.Fatal(err)
		}
		if !reused {
			t.Fatal("a new connection; the test would prove nothing")
		}
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"forbidden"`) || !strings.Contains(body, "no longer trusted") {
			t.Errorf("request %d after the CA left: %d %s; want 403 forbidden", i, resp.StatusCode, body)
		}
	}
	if got := r.issued() - before; got != 0 {
		t.Errorf("issued %d IDs", got)
	}
	if got := counter(t, refused) - refusedBefore; got != 2 {
		t.Errorf("refused{caller=orders,at=request} rose by %g, want 2", got)
	}
	writeAtomic(t, r.caFile, bytes.Join([][]byte{other.CertPEM, r.ca.CertPEM}, nil))
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	resp, body, reused, err := r.postReused(c)
	if err != nil || resp.StatusCode != http.StatusOK || !reused {
		t.Errorf("after the CA came back: %v %s (reused %v) %v; want 200 on the same connection", resp, body, reused, err)
	}
}

// TestRemovedCANoCallersFile: with mutual TLS and no callers file the
// perimeter sets no quota, yet still refuses an open connection whose CA
// left the bundle.
func TestRemovedCANoCallersFile(t *testing.T) {
	r := newRig(t, "", nil)
	c := r.client(r.caller(orders), nil)
	if resp, _, _, err := r.postReused(c); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %v %v", resp, err)
	}
	writeAtomic(t, r.caFile, testpki.NewCA(t, "another CA").CertPEM)
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	before := r.issued()
	resp, body, reused, err := r.postReused(c)
	if err != nil || !reused {
		t.Fatalf("%v (reused %v)", err, reused)
	}
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d %s; want 403", resp.StatusCode, body)
	}
	if got := r.issued() - before; got != 0 {
		t.Errorf("issued %d IDs", got)
	}
}

// TestExpiredSinceHandshake: a connection whose chain was verified at its
// handshake but whose certificate has expired since is refused on its
// next request. The request stands for one on a connection verified
// earlier: its verified chain is the expired certificate's.
func TestExpiredSinceHandshake(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	for _, tc := range []struct {
		name string
		o    testpki.Options
		ok   bool
	}{
		{"valid", testpki.Options{}, true},
		{"expired", testpki.Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Minute)}, false},
		{"not yet valid", testpki.Options{NotBefore: time.Now().Add(time.Hour)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.URIs = []string{orders}
			leaf := r.ca.Client(t, tc.o)
			req := httptest.NewRequest(http.MethodPost, "/v1/ids", nil)
			req = req.WithContext(r.p.ConnContext(req.Context(), nil))
			req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf.Cert},
				VerifiedChains: [][]*x509.Certificate{{leaf.Cert, r.ca.Cert}}}
			for i := range 2 { // the second from the connection's cache
				g, err := r.p.Take(req, 1)
				if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrUntrusted)) {
					t.Fatalf("request %d: Take = %v; want ok %v or ErrUntrusted", i, err, tc.ok)
				}
				if g != nil {
					g.Done(true)
				}
			}
		})
	}
}

// TestTakeAllocs: on a cached connection with nothing changed, a granted
// Take allocates only its reservation.
func TestTakeAllocs(t *testing.T) {
	r := newRig(t, `{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 1e9, "burst": 1000000000}}}`, nil)
	req := requestFrom(r, orders)
	if got := testing.AllocsPerRun(100, func() {
		g, err := r.p.Take(req, 1)
		if err != nil {
			t.Fatal(err)
		}
		g.Done(true)
	}); got > 1 {
		t.Errorf("%g allocations per Take, want 1", got)
	}
}

// TestRemovedCAOpenConnectionRefused: once the client CA bundle is replaced by
// one without the CA that signed a caller's certificate, that caller's
// kept-alive connection mints nothing more (before the fix it still minted; an
// adversarial review found it). A CA is removed from the bundle because it
// must no longer be trusted (compromised, retired); removing a caller from the
// callers file is enforced per request (TestRemovedCallerOpenConnection), and
// removing its CA must be too: a busy HTTP/2 or keep-alive connection never
// handshakes again.
func TestRemovedCAOpenConnectionRefused(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	c := r.client(r.caller(orders), nil)
	if resp, _, err := r.post(c, "/v1/ids"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %v %v", resp, err)
	}
	other := testpki.NewCA(t, "the only trusted CA now")
	writeAtomic(t, r.caFile, other.CertPEM)
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	before := r.issued()
	resp, _, err := r.post(c, "/v1/ids")
	if err == nil && resp.StatusCode == http.StatusOK {
		t.Errorf("a caller whose CA was removed from the bundle got %d IDs on its open connection (resumed %v)", r.issued()-before, resp.TLS.DidResume)
	}
}
