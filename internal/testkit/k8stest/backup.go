package k8stest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	clientsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// A Copy is a backup of the API server's etcd (CopyData).
type Copy struct {
	path string
}

// CopyData backs up the API server's etcd while everything runs, as an
// operator backs up a cluster (etcdctl snapshot save): a consistent
// snapshot of etcd's keyspace at one revision, saved in the test's
// temporary directory.
func (s *Server) CopyData(tb testing.TB) *Copy {
	tb.Helper()
	s.mustOwn(tb, "CopyData")
	s.mu.Lock()
	defer s.mu.Unlock()
	path := filepath.Join(tb.TempDir(), "etcd.snapshot")
	ctx, cancel := context.WithTimeout(context.Background(), etcdReadyTimeout)
	defer cancel()
	cfg := clientv3.Config{Endpoints: []string{s.etcd.endpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if _, err := clientsnapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path); err != nil {
		tb.Fatalf("k8stest: CopyData: snapshot of etcd: %v", err)
	}
	return &Copy{path: path}
}

// Restore puts c back under the API server, as an operator restores a
// cluster from a backup without etcdutl's --bump-revision: it stops the
// API server and its etcd, replaces etcd's data with c (etcdutl snapshot
// restore, the same member name, URLs and cluster token, so the same
// cluster ID), starts both again on their old ports and waits until the
// API server is ready.
//
// etcd's revision falls back to the copy's, and resourceVersions are etcd
// revisions: every object written after the copy is gone or back at an
// older resourceVersion, and the next writes are given resourceVersions
// that objects already had before the restore.
func (s *Server) Restore(tb testing.TB, c *Copy) {
	tb.Helper()
	s.RestoreWith(tb, c, RestoreOptions{})
}

// RestoreOptions say how RestoreWith restores, as etcdutl's flags do.
type RestoreOptions struct {
	// RevisionBump raises the restored revision by this much above the
	// copy's and marks the older revisions compacted (etcdutl snapshot
	// restore --bump-revision --mark-compacted), as the Kubernetes
	// documentation tells operators to: the next writes are then given
	// resourceVersions above any issued before, none repeats — but an
	// object comes back at the resourceVersion of its last write before
	// the copy, lower than the ones it had since. Zero restores the copy's
	// revision.
	RevisionBump uint64
	// UnderRunningAPIServer leaves the API server running while etcd is
	// stopped, restored and started again (an operator who restores etcd
	// without the documented restart of every kube-apiserver, or one API
	// server of several missed by it): the API server's watch cache keeps
	// the objects it saw before the restore, and its etcd client resumes
	// its watches from the revision it had reached.
	UnderRunningAPIServer bool
}

// RestoreWith is Restore with the choices of opts.
func (s *Server) RestoreWith(tb testing.TB, c *Copy, opts RestoreOptions) {
	tb.Helper()
	s.mustOwn(tb, "Restore")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !opts.UnderRunningAPIServer {
		s.stopAPIServer(tb)
	}
	s.etcd.stop()
	if err := os.RemoveAll(s.etcd.dir); err != nil {
		tb.Fatalf("k8stest: Restore: %v", err)
	}
	err := snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        c.path,
		Name:                s.etcd.name(),
		OutputDataDir:       s.etcd.dir,
		PeerURLs:            []string{s.etcd.peer.String()},
		InitialCluster:      s.etcd.initialCluster(),
		InitialClusterToken: s.etcd.token(),
		RevisionBump:        opts.RevisionBump,
		MarkCompacted:       opts.RevisionBump > 0,
	})
	if err != nil {
		tb.Fatalf("k8stest: Restore: etcd from %s: %v", c.path, err)
	}
	if err := s.etcd.start(); err != nil {
		tb.Fatalf("k8stest: Restore: %v", err)
	}
	if opts.UnderRunningAPIServer {
		if err := s.waitReady(); err != nil {
			tb.Fatalf("k8stest: Restore: the API server did not come back on the restored etcd: %v", err)
		}
		return
	}
	s.startAPIServer(tb)
}
