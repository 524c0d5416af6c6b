package node_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
)

// The generator's zero clock policy follows the store: warn on the
// embedded etcd Launch starts (one host: cross-host order means nothing),
// said in the log at start; require on an etcd cluster (shared by hosts
// whose IDs are ordered against each other). A policy given is kept.
func TestClockPolicyDefaultFollowsTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster := etcdtest.Start(t, 1)
	for _, c := range []struct {
		name   string
		open   node.Opener
		policy snowfence.ClockPolicy
		want   snowfence.ClockPolicy
		note   bool
	}{
		{"embedded etcd", node.EmbeddedEtcd(embedetcd.Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"}, etcdstore.Config{}), "", snowfence.ClockWarn, true},
		{"embedded etcd, require given", node.EmbeddedEtcd(embedetcd.Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0"}, etcdstore.Config{}), snowfence.ClockRequire, snowfence.ClockRequire, false},
		{"etcd cluster", node.EtcdCluster(etcdstore.ClientConfig{Endpoints: cluster.Endpoints()}, etcdstore.Config{}), "", snowfence.ClockRequire, false},
	} {
		var logs syncBuffer
		n, err := node.Launch(ctx, node.Config{
			Open:      c.open,
			Keeper:    lease.KeeperConfig{Range: &lease.Range{Lo: 3, Hi: 3}},
			Generator: snowfence.Config{ClockPolicy: c.policy},
			Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := n.Generator.Limits().ClockPolicy
		n.Close(ctx)
		if got != c.want {
			t.Errorf("%s: clock policy %s, want %s", c.name, got, c.want)
		}
		if said := strings.Contains(logs.String(), "clock policy warn, the embedded etcd's default"); said != c.note {
			t.Errorf("%s: logged the embedded clock note: %v, want %v; logs:\n%s", c.name, said, c.note, logs.String())
		}
	}
}
