package testpki_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/testpki"
)

func TestChainsVerify(t *testing.T) {
	ca := testpki.NewCA(t, "test CA")
	srv := ca.Server(t, testpki.Options{})
	if _, err := srv.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "localhost"}); err != nil {
		t.Errorf("server cert for localhost: %v", err)
	}
	if err := srv.Cert.VerifyHostname("127.0.0.1"); err != nil {
		t.Errorf("server cert for 127.0.0.1: %v", err)
	}
	cl := ca.Client(t, testpki.Options{URIs: []string{"spiffe://corp/orders"}})
	if _, err := cl.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client cert: %v", err)
	}
	if got := cl.Cert.URIs[0].String(); got != "spiffe://corp/orders" || len(cl.Cert.DNSNames) != 0 {
		t.Errorf("client SANs = %q, %q; want only spiffe://corp/orders", got, cl.Cert.DNSNames)
	}
	other := testpki.NewCA(t, "other CA")
	if _, err := cl.Cert.Verify(x509.VerifyOptions{Roots: other.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("client cert verified against another CA")
	}
	old := ca.Client(t, testpki.Options{DNSNames: []string{"billing.corp"}, NotAfter: time.Now().Add(-time.Minute)})
	if _, err := old.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("expired client cert verified")
	}
}

func TestWriteLoads(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	certFile, keyFile := ca.Server(t, testpki.Options{}).Write(t, dir, "server")
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Fatalf("LoadX509KeyPair: %v", err)
	}
	b, err := os.ReadFile(ca.Write(t, dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	if blk, _ := pem.Decode(b); blk == nil || blk.Type != "CERTIFICATE" {
		t.Fatalf("ca.crt is not a PEM certificate: %q", b)
	}
	fi, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("key file mode = %v; want 0600", got)
	}
}
