package zkstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/lease"
)

// The origin znode (<path>/origin) is created once, by the first claim
// under the path, with a random id; it also holds the restore floor the
// first claim after a noticed restore sets (FloorMs), so that every
// process's claims start above it, not only those of the Store value that
// noticed.
type origin struct {
	ID      string `json:"id"`
	FloorMs int64  `json:"floor_ms,omitempty"`
}

// readOrigin reads the origin znode, creating it if absent, and returns
// it with its data version. Call it after a sync.
func (s *Store) readOrigin(ctx context.Context) (origin, int32, error) {
	for range 3 {
		type got struct {
			data []byte
			st   *zk.Stat
		}
		g, err := call(ctx, func() (got, error) {
			d, st, err := s.c.Get(s.originPath())
			return got{d, st}, err
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			o := origin{ID: lease.NewNonce()}
			b, _ := json.Marshal(o)
			_, err := call(ctx, func() (string, error) { return s.c.Create(s.originPath(), b, 0, s.acl()) })
			if err == nil {
				s.log.Info("created the origin znode", "id", o.ID)
				return o, 0, nil
			}
			if errors.Is(err, zk.ErrNoNode) {
				// The path itself is gone (deleted by hand, or the data
				// restored from before it was made): make it again.
				s.forgetParents()
				if err := s.ensureParents(ctx); err != nil {
					return origin{}, 0, err
				}
				continue
			}
			if !errors.Is(err, zk.ErrNodeExists) {
				return origin{}, 0, fmt.Errorf("zkstore: create %s: %w; retry", s.originPath(), err)
			}
			continue // another claimer made it: read it
		case err != nil:
			return origin{}, 0, fmt.Errorf("zkstore: read %s: %w; retry", s.originPath(), err)
		}
		var o origin
		if err := json.Unmarshal(g.data, &o); err != nil || o.ID == "" {
			return origin{}, 0, fmt.Errorf("zkstore: %s holds %q, not an origin record (%v): the path holds znodes this store did not write; "+
				"give the store a Path of its own", s.originPath(), g.data, err)
		}
		return o, g.st.Version, nil
	}
	return origin{}, 0, fmt.Errorf("zkstore: %s keeps appearing and vanishing: something else writes under the store's path; give it a Path of its own", s.originPath())
}

// writeFloor raises the origin's floor to floorMs (never lowers it), with
// a write conditioned on the version read, re-reading on a conflict, and
// returns the origin as written (or found) and its version.
func (s *Store) writeFloor(ctx context.Context, o origin, ver int32, floorMs int64) (origin, int32, error) {
	for range 5 {
		if o.FloorMs >= floorMs {
			return o, ver, nil
		}
		o.FloorMs = floorMs
		b, _ := json.Marshal(o)
		st, err := call(ctx, func() (*zk.Stat, error) { return s.c.Set(s.originPath(), b, ver) })
		if err == nil {
			s.log.Warn("restore floor written into the origin znode: every claim under the path starts at or above it",
				"floor", lease.FormatMs(floorMs))
			return o, st.Version, nil
		}
		if !errors.Is(err, zk.ErrBadVersion) {
			return origin{}, 0, fmt.Errorf("zkstore: write the restore floor %s into %s: %w; retry", lease.FormatMs(floorMs), s.originPath(), err)
		}
		if o, ver, err = s.readOrigin(ctx); err != nil {
			return origin{}, 0, err
		}
	}
	return origin{}, 0, fmt.Errorf("zkstore: write the restore floor into %s: it keeps changing under this write; retry", s.originPath())
}
