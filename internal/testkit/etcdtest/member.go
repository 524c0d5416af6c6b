package etcdtest

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/snowfence/snowfence/internal/testkit/etcdmember"
)

// readyTimeout bounds the wait for a member to join its cluster.
const readyTimeout = 30 * time.Second

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
	cfg := etcdmember.Config(etcdmember.Member{Name: m.name, Dir: m.dir, Client: m.client, Peer: m.peer},
		initialCluster, token, embed.ClusterStateFlagNew, nil)
	if !strings.Contains(initialCluster, ",") {
		// Nobody to lose an election to: elect at once.
		cfg.TickMs, cfg.ElectionMs = 10, 100
	}
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
