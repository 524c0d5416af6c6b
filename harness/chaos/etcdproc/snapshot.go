//go:build linux

package etcdproc

import (
	"context"
	"errors"
	"fmt"
	"os"

	clientv3 "go.etcd.io/etcd/client/v3"
	clientsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// Snapshot saves a backup of the cluster's data to path with etcd's
// snapshot API (what `etcdctl snapshot save` does), taken from the first
// running, unpaused member that answers, once that member has applied
// every write the cluster acknowledged before the call (caughtUp).
func (c *Cluster) Snapshot(ctx context.Context, path string) error {
	idx := c.active()
	if len(idx) == 0 {
		return fmt.Errorf("etcdproc: Snapshot: every member: %w", ErrNotRunning)
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var errs []error
	for _, i := range idx {
		cfg := clientv3.Config{Endpoints: []string{c.Endpoint(i)}, Logger: zap.NewNop()}
		if err := caughtUp(ctx, cfg); err != nil {
			errs = append(errs, fmt.Errorf("member %d: %w", i, err))
			continue
		}
		_, err := clientsnapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("member %d: %w", i, err))
	}
	return fmt.Errorf("etcdproc: Snapshot to %s: %w", path, errors.Join(errs...))
}

// RestoreOptions say how RestoreAll rebuilds the cluster, as the flags of
// `etcdutl snapshot restore` do.
type RestoreOptions struct {
	// NewClusterToken restores under a new --initial-cluster-token. etcd
	// derives member and cluster IDs from the token and the peer URLs, so
	// the restored cluster gets a new cluster ID (and new member IDs). The
	// zero value keeps the token, and so the cluster ID.
	NewClusterToken bool
	// RevisionBump raises the restored store's revision by this much and
	// marks the old revisions compacted (--bump-revision
	// --mark-compacted), so clients do not see the revision fall. Zero
	// restores the snapshot's revision.
	RevisionBump uint64
}

// RestoreAll kills every member, replaces each member's data directory
// with one restored from the snapshot at path (etcdutl's restore code, as
// `etcdutl snapshot restore` runs it), starts every member again on its
// URLs and waits until all are ready and a write commits: the cluster an
// operator leaves after restoring an old backup. Writes made after the
// snapshot are gone, and without a RevisionBump the revision falls back to
// the snapshot's. On failure, members may be left running; Close stops
// them.
func (c *Cluster) RestoreAll(ctx context.Context, path string, opts RestoreOptions) error {
	if err := c.Close(); err != nil {
		return fmt.Errorf("etcdproc: RestoreAll: %w", err)
	}
	c.mu.Lock()
	if opts.NewClusterToken {
		c.token = newToken()
	}
	token, ic := c.token, c.initialCluster()
	c.mu.Unlock()
	for _, m := range c.members {
		if err := os.RemoveAll(m.dir); err != nil {
			return fmt.Errorf("etcdproc: RestoreAll: %w", err)
		}
		err := snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
			SnapshotPath:        path,
			Name:                m.name,
			OutputDataDir:       m.dir,
			PeerURLs:            []string{m.peer},
			InitialCluster:      ic,
			InitialClusterToken: token,
			RevisionBump:        opts.RevisionBump,
			MarkCompacted:       opts.RevisionBump > 0,
		})
		if err != nil {
			return fmt.Errorf("etcdproc: RestoreAll: restore member %s from %s: %w", m.name, path, err)
		}
	}
	if err := c.startAll(ctx); err != nil {
		return fmt.Errorf("etcdproc: RestoreAll: %w", err)
	}
	return nil
}

// caughtUp returns once the member cfg names has applied every write
// committed before the call: a linearizable read through it waits for
// that. A follower's snapshot taken without it may miss the last writes
// the cluster acknowledged (seen under load: TestRestoreAll restored a
// snapshot without the key put just before it).
func caughtUp(ctx context.Context, cfg clientv3.Config) error {
	cli, err := clientv3.New(cfg)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Get(ctx, "etcdproc-caught-up", clientv3.WithCountOnly())
	return err
}
