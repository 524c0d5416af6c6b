package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// TLSFiles are the PEM files of a TLS test cluster: its CA, and a client
// certificate and key the CA signed.
type TLSFiles struct {
	CA, ClientCert, ClientKey string
}

// StartTLS starts a single-member etcd that serves clients only over TLS on
// loopback and requires a client certificate signed by its own test CA. It
// returns the https endpoint and the files a client needs, and stops the
// member when the test ends.
func StartTLS(tb testing.TB) (endpoint string, files TLSFiles) {
	tb.Helper()
	dir := tb.TempDir()
	files, server, err := writeTestPKI(dir)
	if err != nil {
		tb.Fatalf("etcdtest.StartTLS: %v", err)
	}
	for range attempts {
		ports, err := freePorts(2)
		if err != nil {
			tb.Fatal(err)
		}
		client := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
		peer := loopbackURL(ports[1])
		cfg := embed.NewConfig()
		cfg.Name = "tls0"
		cfg.Dir = filepath.Join(dir, fmt.Sprintf("data-%d", ports[0]))
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialCluster = "tls0=" + peer.String()
		cfg.TickMs, cfg.ElectionMs = 10, 100
		cfg.UnsafeNoFsync = true
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfg.ClientTLSInfo = transport.TLSInfo{
			CertFile: server.cert, KeyFile: server.key, TrustedCAFile: files.CA, ClientCertAuth: true,
		}
		e, err := embed.StartEtcd(cfg)
		if isAddrInUse(err) {
			continue
		}
		if err != nil {
			tb.Fatalf("etcdtest.StartTLS: %v", err)
		}
		tb.Cleanup(e.Close)
		select {
		case <-e.Server.ReadyNotify():
		case err := <-e.Err():
			tb.Fatalf("etcdtest.StartTLS: %v", err)
		case <-time.After(readyTimeout):
			tb.Fatalf("etcdtest.StartTLS: not ready after %v", readyTimeout)
		}
		return client.String(), files
	}
	tb.Fatalf("etcdtest.StartTLS: no free ports after %d attempts", attempts)
	return "", files
}

type keyPair struct{ cert, key string }

// writeTestPKI writes a CA, a server certificate for 127.0.0.1 and a client
// certificate into dir.
func writeTestPKI(dir string) (TLSFiles, keyPair, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TLSFiles{}, keyPair{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "snowfence test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return TLSFiles{}, keyPair{}, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) (keyPair, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return keyPair{}, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return keyPair{}, err
		}
		kp := keyPair{cert: filepath.Join(dir, name+".pem"), key: filepath.Join(dir, name+"-key.pem")}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return keyPair{}, err
		}
		if err := writePEM(kp.cert, "CERTIFICATE", der); err != nil {
			return keyPair{}, err
		}
		return kp, writePEM(kp.key, "EC PRIVATE KEY", keyDER)
	}
	server, err := issue("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return TLSFiles{}, keyPair{}, err
	}
	client, err := issue("client", 3, x509.ExtKeyUsageClientAuth, nil)
	if err != nil {
		return TLSFiles{}, keyPair{}, err
	}
	files := TLSFiles{CA: filepath.Join(dir, "ca.pem"), ClientCert: client.cert, ClientKey: client.key}
	return files, server, writePEM(files.CA, "CERTIFICATE", caDER)
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
