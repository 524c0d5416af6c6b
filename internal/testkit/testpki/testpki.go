// Package testpki makes throwaway X.509 certificates for tests: a CA,
// server certificates for loopback, and client certificates that name a
// caller by a URI SAN (a SPIFFE ID such as spiffe://corp/orders) or by a
// DNS SAN only. Keys are ECDSA P-256; everything is generated in memory
// with crypto/x509 and needs no network and no openssl.
//
//	ca := testpki.NewCA(t, "test CA")
//	srv := ca.Server(t, testpki.Options{})                          // localhost, 127.0.0.1, ::1
//	orders := ca.Client(t, testpki.Options{URIs: []string{"spiffe://corp/orders"}})
//	old := ca.Client(t, testpki.Options{DNSNames: []string{"billing.corp"},
//		NotAfter: time.Now().Add(-time.Hour)})                        // expired
//	certFile, keyFile := srv.Write(t, dir, "server")                // server.crt, server.key
//	caFile := ca.Write(t, dir, "ca")                                  // ca.crt
//
// Every function takes a testing.TB and fails the test on an error, so
// a test reads as a list of certificates. It is for tests only: the keys
// are written unencrypted and nothing is revocable.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Options are the choices for one leaf certificate. The zero value is a
// certificate valid from an hour ago for a day with no SANs (Server adds
// the loopback names when DNSNames and IPs are both empty).
type Options struct {
	// CommonName is the subject's CN; empty means "testpki leaf". Go's
	// verifier and the perimeter ignore it; it only makes logs readable.
	CommonName string
	// Organization is the subject's O, for servers that read a client's
	// groups from it (kube-apiserver: O=system:masters is its admin group).
	Organization []string
	// DNSNames are the DNS SANs.
	DNSNames []string
	// IPs are the IP SANs.
	IPs []net.IP
	// URIs are the URI SANs, e.g. "spiffe://corp/orders". A URI that
	// does not parse fails the test.
	URIs []string
	// NotBefore and NotAfter bound the validity. Zero NotBefore means an
	// hour ago; zero NotAfter means a day after NotBefore. Set NotAfter in
	// the past for an expired certificate.
	NotBefore, NotAfter time.Time
}

// CA is a self-signed certificate authority that signs leaves.
type CA struct {
	// Cert is the CA certificate and Key its private key.
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM is Cert as one PEM "CERTIFICATE" block, a client-CA bundle
	// on its own.
	CertPEM []byte
}

// Leaf is a certificate signed by a CA, with its key.
type Leaf struct {
	// Cert is the parsed certificate and Key its private key.
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM and KeyPEM are the PEM encodings ("CERTIFICATE" and
	// "PRIVATE KEY", PKCS #8), as a server's --tls-cert and --tls-key
	// files hold them.
	CertPEM, KeyPEM []byte
	// TLS is the pair ready for tls.Config.Certificates.
	TLS tls.Certificate
}

// NewCA returns a new CA named commonName, valid from an hour ago for ten
// years.
func NewCA(tb testing.TB, commonName string) *CA {
	tb.Helper()
	key := newKey(tb)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(tb),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatalf("testpki: create CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("testpki: parse CA: %v", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pemBlock("CERTIFICATE", der)}
}

// Pool returns a pool holding only the CA, for tls.Config.RootCAs (a
// client trusting the server) or ClientCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Write writes CertPEM to dir/name.crt and returns the path.
func (ca *CA) Write(tb testing.TB, dir, name string) string {
	tb.Helper()
	path := filepath.Join(dir, name+".crt")
	writeFile(tb, path, ca.CertPEM, 0o644)
	return path
}

// Server returns a certificate for TLS servers (extended key usage
// serverAuth). With no DNSNames and no IPs in o it names localhost,
// 127.0.0.1 and ::1.
func (ca *CA) Server(tb testing.TB, o Options) *Leaf {
	tb.Helper()
	if len(o.DNSNames) == 0 && len(o.IPs) == 0 {
		o.DNSNames = []string{"localhost"}
		o.IPs = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	return ca.leaf(tb, o, x509.ExtKeyUsageServerAuth)
}

// Client returns a certificate for TLS clients (extended key usage
// clientAuth) with exactly the SANs in o: URIs for a SPIFFE identity,
// DNSNames only for a DNS identity, neither for a certificate that names
// no caller.
func (ca *CA) Client(tb testing.TB, o Options) *Leaf {
	tb.Helper()
	return ca.leaf(tb, o, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) leaf(tb testing.TB, o Options, usage x509.ExtKeyUsage) *Leaf {
	tb.Helper()
	if o.CommonName == "" {
		o.CommonName = "testpki leaf"
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = o.NotBefore.Add(24 * time.Hour)
	}
	uris := make([]*url.URL, 0, len(o.URIs))
	for _, s := range o.URIs {
		u, err := url.Parse(s)
		if err != nil {
			tb.Fatalf("testpki: URI SAN %q: %v", s, err)
		}
		uris = append(uris, u)
	}
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: o.CommonName, Organization: o.Organization},
		NotBefore:    o.NotBefore,
		NotAfter:     o.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     o.DNSNames,
		IPAddresses:  o.IPs,
		URIs:         uris,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		tb.Fatalf("testpki: create leaf: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("testpki: parse leaf: %v", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatalf("testpki: marshal key: %v", err)
	}
	l := &Leaf{Cert: cert, Key: key, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", kder)}
	l.TLS = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}
	return l
}

// Write writes CertPEM to dir/name.crt and KeyPEM to dir/name.key (mode
// 0600) and returns the two paths. It overwrites in place; a test of
// rotation that must never show a reader a half-written file should write
// elsewhere and rename.
func (l *Leaf) Write(tb testing.TB, dir, name string) (certFile, keyFile string) {
	tb.Helper()
	certFile = filepath.Join(dir, name+".crt")
	keyFile = filepath.Join(dir, name+".key")
	writeFile(tb, certFile, l.CertPEM, 0o644)
	writeFile(tb, keyFile, l.KeyPEM, 0o600)
	return certFile, keyFile
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("testpki: generate key: %v", err)
	}
	return key
}

func serial(tb testing.TB) *big.Int {
	tb.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		tb.Fatalf("testpki: serial: %v", err)
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeFile(tb testing.TB, path string, b []byte, mode os.FileMode) {
	tb.Helper()
	if err := os.WriteFile(path, b, mode); err != nil {
		tb.Fatalf("testpki: %v", err)
	}
}
