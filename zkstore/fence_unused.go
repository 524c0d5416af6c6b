package zkstore

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/revert"
)

// A fleet schedule changed at once (SetFleetScheduleUnused) only while no
// lease record exists under the path, checked in the change's own
// multi-op: a holder that claimed between the operator's read and the
// change may already issue under the old schedule, and its IDs and marks
// are what the notice the change skips protects. The check is the marker
// <path>/used, which every write creating a lease record creates in its
// own multi-op (usedOps below) and nothing deletes.

// pathUsed reports, for SetFleetScheduleUnused's read after its sync,
// whether a lease record was ever written under the path: the marker
// exists, or lease znodes an older store wrote without one do.
// Load-bearing for uniqueness: change only with scripts/prove-search unused.
func (s *Store) pathUsed(ctx context.Context) (bool, error) {
	if revert.Unused {
		return false, nil
	}
	used, err := s.used(ctx)
	if err != nil || used {
		return used, err
	}
	n, err := s.countRecords(ctx)
	if err != nil {
		return false, err
	}
	return n > 0, nil
}

// unusedOps are the ops SetFleetScheduleUnused's multi-op puts before the
// schedule's Set: the marker created and deleted again, which fails the
// write (zk.ErrNodeExists) once any lease record was written, even after
// the read. Load-bearing for uniqueness: change only with
// scripts/prove-search unused.
func (s *Store) unusedOps() []any {
	if revert.Unused {
		return nil
	}
	return []any{&zk.CreateRequest{Path: s.usedPath(), Acl: s.acl()}, &zk.DeleteRequest{Path: s.usedPath(), Version: -1}}
}

// usedOps is what a multi-op that creates a lease record adds: the marker's
// create when the writer read it absent (wasUsed false), a create that
// fails, and fails the write, if another write made it meanwhile (the
// writer reads again). Load-bearing for uniqueness: change only with
// scripts/prove-search unused.
func (s *Store) usedOps(wasUsed bool) []any {
	if wasUsed || revert.Unused {
		return nil
	}
	return []any{&zk.CreateRequest{Path: s.usedPath(), Acl: s.acl()}}
}
