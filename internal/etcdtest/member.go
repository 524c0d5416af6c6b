package etcdtest

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Timing of the embedded members: faster than etcd's defaults (100 ms
// heartbeat, 1 s election) so a stopped leader is replaced quickly, slow
// enough not to flap on a busy two-core machine under the race detector.
const (
	tickMs     = 50
	electionMs = 500
	// readyTimeout bounds the wait for a member to join its cluster.
	readyTimeout = 30 * time.Second
)

// member is one embedded etcd server of a Cluster.
type member struct {
	name   string
	dir    string
	client url.URL
	peer   url.URL
	etcd   *embed.Etcd // nil while stopped
}

// config builds a fresh embed.Config for m (embed mutates the one it is
// given, so every start needs a new one).
func (m *member) config(initialCluster, token string) *embed.Config {
	single := !strings.Contains(initialCluster, ",")
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenClientUrls = []url.URL{m.client}
	cfg.AdvertiseClientUrls = []url.URL{m.client}
	cfg.ListenPeerUrls = []url.URL{m.peer}
	cfg.AdvertisePeerUrls = []url.URL{m.peer}
	cfg.InitialCluster = initialCluster
	cfg.InitialClusterToken = token
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.TickMs = tickMs
	cfg.ElectionMs = electionMs
	if single {
		// Nobody to lose an election to: elect at once.
		cfg.TickMs, cfg.ElectionMs = 10, 100
	}
	cfg.UnsafeNoFsync = true // test data: speed over durability
	cfg.EnableGRPCGateway = false
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	return cfg
}

// start launches the member's server; it does not wait for the member to
// join (see waitReady).
func (m *member) start(initialCluster, token string) error {
	e, err := embed.StartEtcd(m.config(initialCluster, token))
	if err != nil {
		return fmt.Errorf("etcdtest: start member %s: %w", m.name, err)
	}
	m.etcd = e
	return nil
}

// waitReady waits until the member has joined its cluster and serves
// clients.
func (m *member) waitReady() error {
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-m.etcd.Server.ReadyNotify():
		return nil
	case err := <-m.etcd.Err():
		return fmt.Errorf("etcdtest: member %s failed: %w", m.name, err)
	case <-t.C:
		return fmt.Errorf("etcdtest: member %s not ready after %v", m.name, readyTimeout)
	}
}

// stop shuts the member's server down and waits until it has.
func (m *member) stop() {
	if m.etcd == nil {
		return
	}
	m.etcd.Close()
	m.etcd = nil
}

// url builds an http URL on 127.0.0.1.
func loopbackURL(port int) url.URL {
	return url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)}
}
