package etcdtest

import (
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/snowfence/snowfence/internal/testkit/testpki"
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
	ca := testpki.NewCA(tb, "snowfence test CA")
	serverCert, serverKey := ca.Server(tb, testpki.Options{CommonName: "server"}).Write(tb, dir, "server")
	files = TLSFiles{CA: ca.Write(tb, dir, "ca")}
	files.ClientCert, files.ClientKey = ca.Client(tb, testpki.Options{CommonName: "client"}).Write(tb, dir, "client")
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
			CertFile: serverCert, KeyFile: serverKey, TrustedCAFile: files.CA, ClientCertAuth: true,
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
