package perimeter

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/testpki"
)

// servedSerial is the serial of the certificate a new handshake gets.
func (r *rig) servedSerial(leaf *testpki.Leaf) string {
	r.t.Helper()
	resp, _, err := r.post(r.client(leaf, nil), "/v1/ids")
	if err != nil {
		r.t.Fatal(err)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.String()
}

// TestBadFileKeepsLastGood: every way a file can be bad leaves the last
// good configuration serving, reports the error, and a good file after it
// is taken.
func TestBadFileKeepsLastGood(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	leaf := r.caller(orders)
	good := r.servedSerial(leaf)
	next := r.ca.Server(t, testpki.Options{})
	otherKey := r.ca.Server(t, testpki.Options{}).KeyPEM
	expired := r.ca.Server(t, testpki.Options{NotAfter: time.Now().Add(-time.Minute), NotBefore: time.Now().Add(-time.Hour)})
	caPEM, _ := os.ReadFile(r.caFile)
	cases := []struct {
		name  string
		write func()
		want  string // in the error
	}{
		{"cert half-written", func() { writeInPlace(t, r.certFile, next.CertPEM[:len(next.CertPEM)/2]) }, "tls-cert"},
		{"chain with a truncated second certificate", func() {
			writeInPlace(t, r.certFile, append(append([]byte{}, next.CertPEM...), next.CertPEM[:40]...))
		}, "not a whole PEM block"},
		{"key does not match", func() { writeInPlace(t, r.certFile, next.CertPEM); writeInPlace(t, r.keyFile, otherKey) }, "tls-cert"},
		{"cert expired", func() { writeInPlace(t, r.certFile, expired.CertPEM); writeInPlace(t, r.keyFile, expired.KeyPEM) }, "not now"},
		{"cert missing", func() { os.Remove(r.certFile) }, "no such file"},
		{"CA bundle truncated", func() {
			writeInPlace(t, r.caFile, append(append([]byte{}, caPEM...), caPEM[:len(caPEM)-30]...))
		}, "client-ca"},
		{"CA bundle empty", func() { writeInPlace(t, r.caFile, nil) }, "no PEM certificate"},
		{"callers burst below the largest batch", func() {
			writeInPlace(t, r.callersFile, []byte(`{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 10, "burst": 999}}}`))
		}, `"burst" is 999`},
		{"callers not JSON", func() { writeInPlace(t, r.callersFile, []byte(`{"default": "deny", "callers": {`)) }, "callers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.write()
			err := r.p.Reload()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Reload: %v; want an error containing %q", err, tc.want)
			}
			if again := r.p.Reload(); again != nil {
				t.Errorf("a second Reload with no change: %v; want the failure reported once", again)
			}
			if got := r.servedSerial(leaf); got != good {
				t.Errorf("serving serial %s after a bad file, want the last good %s", got, good)
			}
			// Restore the good files for the next case.
			writeAtomic(t, r.caFile, caPEM)
			writeAtomic(t, r.callersFile, []byte(defaultCallers))
		})
	}
	// A good pair after all that is taken.
	writeAtomic(t, r.keyFile, next.KeyPEM)
	writeAtomic(t, r.certFile, next.CertPEM)
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := r.servedSerial(leaf); got != next.Cert.SerialNumber.String() {
		t.Errorf("serving %s after a good rotation, want %s", got, next.Cert.SerialNumber)
	}
	if got := counter(t, r.p.metrics.reloads.WithLabelValues(unitCert, "error")); got < 5 {
		t.Errorf("tls-cert reload errors counted %v, want ≥ 5", got)
	}
}

// TestCARotation: a new CA in the bundle admits its callers; the old CA
// removed shuts its callers out, resumed sessions included.
func TestCARotation(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	next := testpki.NewCA(t, "next callers CA")
	oldPEM, _ := os.ReadFile(r.caFile)
	newCaller := next.Client(t, testpki.Options{URIs: []string{orders}})
	if _, _, err := r.post(r.client(newCaller, nil), "/v1/ids"); err == nil {
		t.Fatal("a caller of a CA not yet in the bundle got in")
	}
	writeAtomic(t, r.caFile, append(append([]byte{}, oldPEM...), next.CertPEM...))
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	if resp, _, err := r.post(r.client(newCaller, nil), "/v1/ids"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the new CA's caller after the bundle grew: %v %v", resp, err)
	}
	writeAtomic(t, r.caFile, next.CertPEM)
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.post(r.client(r.caller(orders), nil), "/v1/ids"); err == nil {
		t.Fatal("a caller of the removed CA got in")
	}
}

// TestSymlinkSwap: a Kubernetes-style update, where the file is a symbolic
// link into a directory that is swapped, is seen by the poll.
func TestSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	link := func(target, name string) {
		tmp := filepath.Join(dir, name+".tmp")
		if err := os.Symlink(target, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"v1", "v2"} {
		if err := os.Mkdir(filepath.Join(dir, v), 0o755); err != nil {
			t.Fatal(err)
		}
		body := `{"default": "deny", "callers": {}}`
		if v == "v2" {
			body = `{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 1, "burst": 1000}}}`
		}
		if err := os.WriteFile(filepath.Join(dir, v, "callers.json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link("v1", "..data")
	link(filepath.Join("..data", "callers.json"), "callers.json")
	p, err := New(Config{CallersFile: filepath.Join(dir, "callers.json"), PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, _, ok := p.callers.Load().callers.Lookup(orders); ok {
		t.Fatal("v1 allows orders")
	}
	link("v2", "..data") // the swap: the link now leads to other content
	if err := p.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := p.callers.Load().callers.Lookup(orders); !ok {
		t.Fatal("the swap to v2 was not seen")
	}
}

// TestPolling: the poll loop reloads a changed file on its own, paced by
// the injected clock.
func TestPolling(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	reloads := make(chan error, 4)
	p, err := New(Config{CallersFile: r.callersFile, PollInterval: time.Second, Clock: r.clock,
		onReload: func(file string, err error) { reloads <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := <-reloads; err != nil { // the initial load
		t.Fatal(err)
	}
	writeAtomic(t, r.callersFile, []byte(`{"default": "deny", "callers": {}}`))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.clock.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	select {
	case err := <-reloads:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("no reload within 10 s of the poll interval passing")
	}
	if _, _, ok := p.callers.Load().callers.Lookup(orders); ok {
		t.Error("the polled reload did not take effect")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestNewErrors(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	bad := filepath.Join(r.dir, "bad.json")
	writeAtomic(t, bad, []byte(`{"default": "allow"}`))
	for name, cfg := range map[string]Config{
		"cert without CA": {CertFile: r.certFile, KeyFile: r.keyFile},
		"bad callers":     {CallersFile: bad},
		"missing cert":    {CertFile: filepath.Join(r.dir, "nope"), KeyFile: r.keyFile, ClientCAFile: r.caFile},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := New(Config{CertFile: r.certFile, KeyFile: r.keyFile}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("cert without CA: %v, want ErrInvalidConfig", err)
	}
	if _, err := New(Config{CallersFile: bad}); !errors.Is(err, ErrInvalidCallers) {
		t.Errorf("bad callers: %v, want ErrInvalidCallers", err)
	}
}
