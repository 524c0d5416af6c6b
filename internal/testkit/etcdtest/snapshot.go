package etcdtest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	clientsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// Snapshot saves a backup of the cluster's data, taken from the first
// running member with etcd's snapshot API (what `etcdctl snapshot save`
// does), and returns the file's path in the test's TempDir.
func (c *Cluster) Snapshot(tb testing.TB) string {
	tb.Helper()
	var ep string
	for _, m := range c.members {
		if m.etcd != nil {
			ep = m.client.String()
			break
		}
	}
	if ep == "" {
		tb.Fatalf("etcdtest: Snapshot: no member is running")
	}
	path := filepath.Join(tb.TempDir(), "snapshot.db")
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	cfg := clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if _, err := clientsnapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path); err != nil {
		tb.Fatalf("etcdtest: Snapshot from %s: %v", ep, err)
	}
	return path
}

// RestoreOptions say how Restore rebuilds the cluster, as the flags of
// `etcdutl snapshot restore` do.
type RestoreOptions struct {
	// NewClusterToken restores under a new --initial-cluster-token. etcd
	// derives member and cluster IDs from the token and the peer URLs, so
	// the restored cluster gets a new cluster ID. The zero value keeps the
	// old token, and so the old cluster ID.
	NewClusterToken bool
	// RevisionBump raises the restored store's revision by this much and
	// marks the old revisions compacted (--bump-revision --mark-compacted),
	// so clients do not see the revision fall. Zero restores the snapshot's
	// revision.
	RevisionBump uint64
}

// Restore stops every member, replaces each member's data with the snapshot
// at path (etcd's own restore code, as `etcdutl snapshot restore` runs it),
// and starts the members again on their old URLs: the cluster an operator
// leaves after restoring from an old backup. It waits until every member
// serves.
func (c *Cluster) Restore(tb testing.TB, path string, opts RestoreOptions) {
	tb.Helper()
	c.stopAll()
	if opts.NewClusterToken {
		c.token = "etcdtest-" + randomHex()
	}
	ic := c.initialCluster()
	for _, m := range c.members {
		if err := os.RemoveAll(m.dir); err != nil {
			tb.Fatalf("etcdtest: Restore: %v", err)
		}
		err := snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
			SnapshotPath:        path,
			Name:                m.name,
			OutputDataDir:       m.dir,
			PeerURLs:            []string{m.peer.String()},
			InitialCluster:      ic,
			InitialClusterToken: c.token,
			RevisionBump:        opts.RevisionBump,
			MarkCompacted:       opts.RevisionBump > 0,
		})
		if err != nil {
			tb.Fatalf("etcdtest: Restore member %s from %s: %v", m.name, path, err)
		}
	}
	for _, m := range c.members {
		if err := m.start(ic, c.token); err != nil {
			tb.Fatalf("etcdtest: Restore: %v", err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.members))
	for i, m := range c.members {
		wg.Go(func() { errs[i] = m.waitReady() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatalf("etcdtest: Restore: %v", err)
		}
	}
}
