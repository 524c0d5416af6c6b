// Package etcdmember configures the embedded etcd members of the test
// clusters: internal/testkit/etcdtest's in-process members and the chaos suite's
// member processes (harness/chaos/etcdproc) start from the same settings.
package etcdmember

import (
	"net/url"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Timing of the members: faster than etcd's defaults (100 ms heartbeat, 1 s
// election) so a stopped or crashed leader is replaced quickly, slow enough
// not to flap on a busy two-core machine under the race detector.
const (
	TickMs     = 50
	ElectionMs = 500
)

// Member is one member's identity and URLs.
type Member struct {
	Name, Dir    string
	Client, Peer url.URL
}

// Config returns a fresh embed.Config for m (embed mutates the one it is
// given, so every start needs a new one) in a cluster of initialCluster
// (name=peer-url,…), with token and state ("new" or "existing"), logging
// to log (nil: nowhere). Data is not fsynced: test data, speed over
// durability; a killed process loses nothing, only a crashed host would.
func Config(m Member, initialCluster, token, state string, log *zap.Logger) *embed.Config {
	if log == nil {
		log = zap.NewNop()
	}
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = m.Dir
	cfg.ListenClientUrls = []url.URL{m.Client}
	cfg.AdvertiseClientUrls = []url.URL{m.Client}
	cfg.ListenPeerUrls = []url.URL{m.Peer}
	cfg.AdvertisePeerUrls = []url.URL{m.Peer}
	cfg.InitialCluster = initialCluster
	cfg.InitialClusterToken = token
	cfg.ClusterState = state
	cfg.TickMs = TickMs
	cfg.ElectionMs = ElectionMs
	cfg.UnsafeNoFsync = true
	cfg.EnableGRPCGateway = false
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(log)
	return cfg
}
