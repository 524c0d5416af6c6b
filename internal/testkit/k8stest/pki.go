package k8stest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/snowfence/snowfence/internal/testkit/testpki"
)

// pki is what an API server of the kit trusts and presents: one CA that
// signs its serving certificate and its clients' certificates (the admin's
// names the group system:masters), and the RSA key that signs and checks
// service-account tokens. All of it is made in Go, per server.
type pki struct {
	ca    []byte // PEM: the CA, which clients trust for the server
	admin *testpki.Leaf

	// Files, for the API server's flags.
	caFile, certFile, keyFile, saPub, saKey string
}

// newPKI makes a server's PKI and writes the files to dir.
func newPKI(tb testing.TB, dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca := testpki.NewCA(tb, "k8stest CA")
	p := &pki{
		ca:     ca.CertPEM,
		admin:  ca.Client(tb, testpki.Options{CommonName: "k8stest-admin", Organization: []string{"system:masters"}}),
		caFile: ca.Write(tb, dir, "ca"),
	}
	p.certFile, p.keyFile = ca.Server(tb, testpki.Options{CommonName: "kube-apiserver",
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1)}}).Write(tb, dir, "apiserver")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	p.saKey = filepath.Join(dir, "sa.key")
	p.saPub = filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(p.saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return nil, err
	}
	return p, nil
}
