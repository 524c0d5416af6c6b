package k8stest

import (
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/snowfence/snowfence/internal/testkit/etcdmember"
)

// etcdReadyTimeout bounds the wait for the embedded etcd to serve.
const etcdReadyTimeout = 30 * time.Second

// store is the API server's etcd: one embedded member in the test process,
// configured as etcdtest's members are (etcdmember), on loopback, its data
// in dir. Stopping it and starting it again keeps its data, ports and
// cluster ID.
type store struct {
	dir          string
	client, peer url.URL
	etcd         *embed.Etcd // nil while stopped
}

// newStore describes a member on the given ports; start starts it.
func newStore(dir string, clientPort, peerPort int) *store {
	return &store{
		dir:    dir,
		client: url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)},
		peer:   url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)},
	}
}

// name is the member's name.
func (s *store) name() string { return "k8s0" }

// token is the cluster's --initial-cluster-token; with the name and peer
// URL it makes the cluster ID, which a restore keeps.
func (s *store) token() string { return "k8stest" }

// initialCluster is the member's --initial-cluster.
func (s *store) initialCluster() string { return s.name() + "=" + s.peer.String() }

// endpoint is the member's client URL, the API server's --etcd-servers.
func (s *store) endpoint() string { return s.client.String() }

// start starts the member and waits, up to etcdReadyTimeout, until it
// serves.
func (s *store) start() error {
	cfg := etcdmember.Config(etcdmember.Member{Name: s.name(), Dir: s.dir, Client: s.client, Peer: s.peer},
		s.initialCluster(), s.token(), embed.ClusterStateFlagNew, nil)
	cfg.TickMs, cfg.ElectionMs = 10, 100 // nobody to lose an election to: elect at once
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("k8stest: start etcd: %w", err)
	}
	t := time.NewTimer(etcdReadyTimeout)
	defer t.Stop()
	select {
	case <-e.Server.ReadyNotify():
		s.etcd = e
		return nil
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("k8stest: etcd failed: %w", err)
	case <-t.C:
		e.Close()
		return fmt.Errorf("k8stest: etcd not ready after %v", etcdReadyTimeout)
	}
}

// stop shuts the member down and waits until it has; stopping a stopped
// member does nothing.
func (s *store) stop() {
	if s.etcd == nil {
		return
	}
	s.etcd.Close()
	s.etcd = nil
}
