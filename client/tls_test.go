package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestTLS: Config.TLS reaches the Client's own transport; without the
// server's CA the handshake fails and no IDs come.
func TestTLS(t *testing.T) {
	var next atomic.Int64
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			writeError(w, http.StatusForbidden, "", "no_certificate")
			return
		}
		writeBatch(w, &next, countOf(r))
	}))
	ts.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	// The server's own certificate serves as the client's: the server
	// asks for any.
	cert := ts.TLS.Certificates[0]

	c := newClient(t, Config{Endpoints: []string{ts.URL}, TLS: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}})
	if id, err := c.Next(ctxT(t)); err != nil || id != 1 {
		t.Fatalf("Next over mutual TLS = %d, %v; want 1", id, err)
	}

	c = newClient(t, Config{Endpoints: []string{ts.URL}, MaxAttempts: 2, BaseBackoff: time.Microsecond, MaxBackoff: time.Microsecond})
	if _, err := c.Next(ctxT(t)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Next without the CA: %v, want ErrUnavailable", err)
	}
}

// TestConnectionRefused: an endpoint that refuses connections is taken out
// and the backup answers.
func TestConnectionRefused(t *testing.T) {
	var s *scripted
	s = newScripted(t, func(w http.ResponseWriter, r *http.Request) { s.ok(w, r) })
	c := newClient(t, Config{Endpoints: []string{deadURL(t), s.ts.URL}, BaseBackoff: time.Microsecond, MaxBackoff: time.Microsecond, ProbeInterval: time.Hour})
	if id, err := c.Next(ctxT(t)); err != nil || id != 1 {
		t.Fatalf("Next = %d, %v; want 1 from the backup", id, err)
	}
	if st := c.Stats(); st.Endpoint != 1 || st.Failures != 3 {
		t.Errorf("stats %+v: want endpoint 1 in use after 3 failures", st)
	}
}
