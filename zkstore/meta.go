package zkstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// The znodes beside the leases that every keyspace under the path shares
// (see the package documentation): the fleet schedule record, the copy of
// the region registry, and the marker that some lease record exists.
func (s *Store) schedulePath() string { return s.cfg.Path + "/schedule" }
func (s *Store) registryPath() string { return s.cfg.Path + "/registry" }
func (s *Store) usedPath() string     { return s.cfg.Path + "/used" }

// A meta is one of those znodes as read: its data and data version. A
// claim's multi-op checks the versions it read of the schedule and the
// registry, so it commits only on the two it was decided on.
type meta struct {
	data    []byte
	version int32
}

// readMeta reads znode p, after the caller's sync, creating it empty (and
// the path above it) if it is absent: a multi-op can check the version of
// a znode that exists, not the absence of one, so these znodes always
// exist once read, and empty data is "never written".
func (s *Store) readMeta(ctx context.Context, p string) (meta, error) {
	for range 3 {
		type got struct {
			data []byte
			st   *zk.Stat
		}
		g, err := call(ctx, func() (got, error) {
			d, st, err := s.c.Get(p)
			return got{d, st}, err
		})
		if err == nil {
			return meta{data: g.data, version: g.st.Version}, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return meta{}, fmt.Errorf("zkstore: read %s: %w; retry", p, err)
		}
		if err := s.ensure(ctx, p); err != nil {
			return meta{}, err
		}
	}
	return meta{}, fmt.Errorf("zkstore: %s keeps vanishing: something else deletes znodes under the store's path; give it a Path of its own", p)
}

// used reports whether the marker znode <path>/used exists: whether any
// lease record was ever written under the path, in any keyspace. Every
// write that creates a lease record creates the marker in the same
// multi-op when it read it absent (usedOps, fence_unused.go), and nothing deletes it, so
// SetFleetScheduleUnused can check in its own multi-op that none exists
// (a create of the marker fails if one does). Call it after a sync.
func (s *Store) used(ctx context.Context) (bool, error) {
	_, err := call(ctx, func() (struct{}, error) {
		_, _, err := s.c.Get(s.usedPath())
		return struct{}{}, err
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, zk.ErrNoNode):
		return false, nil
	}
	return false, fmt.Errorf("zkstore: read %s: %w; retry", s.usedPath(), err)
}
