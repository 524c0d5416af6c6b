package perimeter

import (
	"crypto/tls"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/testpki"
)

func TestKnownCallersAccepted(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	for _, id := range []string{orders, billing} {
		t.Run(id, func(t *testing.T) {
			before := r.issued()
			resp, body, err := r.post(r.client(r.caller(id), nil), "/v1/ids?count=3")
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d %s, want 200", resp.StatusCode, body)
			}
			if got := r.issued() - before; got != 3 {
				t.Errorf("issued %d IDs, want 3", got)
			}
			if got := counter(t, r.p.metrics.issued.WithLabelValues(id)); got != 3 {
				t.Errorf("issued metric for %s = %v, want 3", id, got)
			}
		})
	}
}

// TestHandshakeRefused: every caller the perimeter must not let in fails
// before any ID is issued.
func TestHandshakeRefused(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	other := testpki.NewCA(t, "another CA")
	cases := []struct {
		name string
		leaf *testpki.Leaf
		// metric is the refusal counter that must move, or "" when
		// crypto/tls refuses before the perimeter sees the certificate.
		metric string
	}{
		{"no certificate", nil, ""},
		{"another CA", other.Client(t, testpki.Options{URIs: []string{orders}}), ""},
		{"expired", r.ca.Client(t, testpki.Options{URIs: []string{orders}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}), ""},
		{"not yet valid", r.ca.Client(t, testpki.Options{URIs: []string{orders}, NotBefore: time.Now().Add(time.Hour)}), ""},
		{"no SAN", r.ca.Client(t, testpki.Options{CommonName: orders}), labelNone},
		{"unlisted, default deny", r.caller("spiffe://corp/stranger"), labelUnlisted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := r.issued()
			var refusedBefore float64
			if tc.metric != "" {
				refusedBefore = counter(t, r.p.metrics.refused.WithLabelValues(tc.metric, "handshake"))
			}
			resp, body, err := r.post(r.client(tc.leaf, nil), "/v1/ids")
			if err == nil {
				t.Fatalf("request succeeded with status %d %s; want the handshake refused", resp.StatusCode, body)
			}
			if got := r.issued() - before; got != 0 {
				t.Errorf("issued %d IDs to a refused caller", got)
			}
			if tc.metric != "" {
				if got := counter(t, r.p.metrics.refused.WithLabelValues(tc.metric, "handshake")) - refusedBefore; got != 1 {
					t.Errorf("refused{caller=%q,at=handshake} moved by %v, want 1", tc.metric, got)
				}
			}
		})
	}
	// The refusals left no stranger's name in the metrics.
	checkCallerLabels(t, r, orders, billing, labelUnlisted, labelNone)
}

// checkCallerLabels fails unless every "caller" label value of the rig's
// metrics is one of allowed.
func checkCallerLabels(t *testing.T, r *rig, allowed ...string) {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "caller" && !slices.Contains(allowed, l.GetValue()) {
					t.Errorf("%s has a series for caller %q; want only %q", mf.GetName(), l.GetValue(), allowed)
				}
			}
		}
	}
}

// TestResumedSessionReauthorized: a caller removed from the callers file
// cannot come back on a session ticket from before; crypto/tls skips
// VerifyPeerCertificate on resumption but runs VerifyConnection.
func TestResumedSessionReauthorized(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	cache := tls.NewLRUClientSessionCache(8)
	c := r.client(r.caller(orders), func(cfg *tls.Config) { cfg.ClientSessionCache = cache })
	tr := c.Transport.(*http.Transport)
	do := func() (*http.Response, error) {
		t.Helper()
		tr.CloseIdleConnections() // a new connection, so a new handshake
		resp, _, err := r.post(c, "/v1/ids")
		return resp, err
	}
	first, err := do()
	if err != nil || first.StatusCode != http.StatusOK {
		t.Fatalf("first request: %v %v", first, err)
	}
	if first.TLS.DidResume {
		t.Fatal("the first connection resumed; the cache was not empty")
	}
	second, err := do()
	if err != nil || second.StatusCode != http.StatusOK {
		t.Fatalf("second request: %v %v", second, err)
	}
	if !second.TLS.DidResume {
		t.Fatal("the second connection did not resume; the test would prove nothing")
	}
	if err := r.writeCallers(`{"default": "deny", "callers": {"billing.corp": {"rate": 1000, "burst": 1000}}}`); err != nil {
		t.Fatal(err)
	}
	before := r.issued()
	if resp, err := do(); err == nil {
		t.Fatalf("after removal: status %d on a resumed session (DidResume=%v); want the handshake refused", resp.StatusCode, resp.TLS.DidResume)
	}
	if got := r.issued() - before; got != 0 {
		t.Errorf("issued %d IDs to a removed caller", got)
	}
}

// TestRemovedCallerOpenConnection: a connection made before the caller was
// removed gets 403 on its next request.
func TestRemovedCallerOpenConnection(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	c := r.client(r.caller(orders), nil)
	if resp, _, err := r.post(c, "/v1/ids"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %v %v", resp, err)
	}
	if err := r.writeCallers(`{"default": "deny", "callers": {}}`); err != nil {
		t.Fatal(err)
	}
	before := r.issued()
	resp, body, err := r.post(c, "/v1/ids")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"forbidden"`) {
		t.Errorf("status %d %s; want 403 forbidden", resp.StatusCode, body)
	}
	if got := r.issued() - before; got != 0 {
		t.Errorf("issued %d IDs", got)
	}
}

// TestCertRotationUnderLoad rotates the server certificate while clients
// send requests on kept-alive and fresh connections: no request fails,
// and new handshakes present the newest certificate.
func TestCertRotationUnderLoad(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	const workers, perWorker, rotations = 4, 150, 10
	var failed, done atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	leaf := r.caller(orders)
	for w := range workers {
		c := r.client(leaf, func(cfg *tls.Config) {
			if w%2 == 1 {
				cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			}
		})
		if w >= 2 { // half the workers make a new connection per request
			c.Transport.(*http.Transport).DisableKeepAlives = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				resp, body, err := r.post(c, "/v1/ids")
				if err == nil && resp.StatusCode != http.StatusOK {
					err = errors.New(resp.Status + " " + body)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				done.Add(1)
			}
		}()
	}
	var last *testpki.Leaf
	start := time.Now()
	for i := range rotations {
		// Rotate once the load has moved on, so rotations spread over it.
		for done.Load() < int64((i+1)*workers*perWorker/(rotations+2)) {
			time.Sleep(time.Millisecond) // pacing the rotations, not synchronising
		}
		last = r.ca.Server(t, testpki.Options{CommonName: "server " + string(rune('a'+i))})
		writeAtomic(t, r.keyFile, last.KeyPEM) // key first: a mismatched moment
		writeAtomic(t, r.certFile, last.CertPEM)
		if err := r.p.Reload(); err != nil {
			t.Fatalf("rotation %d: %v", i, err)
		}
	}
	wg.Wait()
	t.Logf("%d requests across %d rotations in %v", done.Load(), rotations, time.Since(start))
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of %d requests failed during rotation; first: %v", n, done.Load(), firstErr.Load())
	}
	resp, _, err := r.post(r.client(leaf, nil), "/v1/ids")
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.TLS.PeerCertificates[0].SerialNumber; got.Cmp(last.Cert.SerialNumber) != 0 {
		t.Errorf("a new handshake got serial %v, want the last rotation's %v", got, last.Cert.SerialNumber)
	}
}
