package zkstore

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/lease/registry"
)

var _ registry.Store = (*Store)(nil)

// The store's copy of the region registry is the znode <path>/registry,
// shared by every keyspace under the path: empty (or absent) while none
// was written, registry.Encode's JSON otherwise. Every write of it is a Set
// on the znode's data version read after a sync; every claim's multi-op
// checks that version, so a claim commits only while the schedule the
// registry records is the one it compared with the fleet schedule record.

// Registry implements registry.Reader: the registry read after a sync; the
// zero Registry when none was written.
func (s *Store) Registry(ctx context.Context) (registry.Registry, error) {
	if err := s.open(); err != nil {
		return registry.Registry{}, err
	}
	g := generation(s.c)
	if err := s.sync(ctx); err != nil {
		return registry.Registry{}, err
	}
	r, _, err := s.readRegistry(ctx)
	if err == nil && generation(s.c) != g {
		err = errSwapped
	}
	return r, err
}

// readRegistry reads the registry's znode after the caller's sync, with
// its data version.
func (s *Store) readRegistry(ctx context.Context) (registry.Registry, int32, error) {
	m, err := s.readMeta(ctx, s.registryPath())
	if err != nil {
		return registry.Registry{}, 0, err
	}
	if len(m.data) == 0 {
		return registry.Registry{}, m.version, nil
	}
	r, err := registry.Decode(m.data)
	if err != nil {
		return registry.Registry{}, 0, fmt.Errorf("zkstore: %s holds %q: %v (was it written by hand?); put back the registry of another "+
			"region's copy (snowfence regions list there), or empty the znode if no registry was ever meant to be here", s.registryPath(), m.data, err)
	}
	return r, m.version, nil
}

// SetRegistry implements registry.Store: it writes next if the stored
// registry is at version next.Version-1 (none written, for version 1),
// with a Set on the znode's data version read after a sync. A stored
// registry equal to next is success (a retry, or a second copy on the same
// path); any other version registry.ErrConflict. After an error of unknown
// outcome it reads the registry again and reports success if it is next.
func (s *Store) SetRegistry(ctx context.Context, next registry.Registry) error {
	return s.writeRegistry(ctx, next, false)
}

// CreateRegistry implements registry.Store: it writes r if no registry is
// stored, whatever r's version; a stored registry equal to r is success,
// any other registry.ErrConflict.
func (s *Store) CreateRegistry(ctx context.Context, r registry.Registry) error {
	return s.writeRegistry(ctx, r, true)
}

// RegistryIdentity implements registry.Reader: "zookeeper origin <id> path
// <path>", the random id of the path's origin znode (created with the
// first claim, or here if none was made yet) and the path. Every Store
// value and keyspace on the path reads the same; a path made anew — or
// another ensemble's — has another origin id.
func (s *Store) RegistryIdentity(ctx context.Context) (string, error) {
	if err := s.open(); err != nil {
		return "", err
	}
	if err := s.ensureParents(ctx); err != nil {
		return "", err
	}
	if err := s.sync(ctx); err != nil {
		return "", err
	}
	o, _, err := s.readOrigin(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("zookeeper origin %s path %s", o.ID, s.cfg.Path), nil
}

// writeRegistry is SetRegistry, or with create CreateRegistry.
func (s *Store) writeRegistry(ctx context.Context, next registry.Registry, create bool) error {
	if err := s.open(); err != nil {
		return err
	}
	body, err := registry.Encode(next)
	if err != nil {
		return fmt.Errorf("zkstore: write the region registry: %w", err)
	}
	where := "the registry's znode " + s.registryPath()
	for range maxConflicts {
		g := generation(s.c)
		if err := s.sync(ctx); err != nil {
			return fmt.Errorf("zkstore: write the region registry: %w", err)
		}
		cur, ver, err := s.readRegistry(ctx)
		if err != nil {
			return err
		}
		if generation(s.c) != g {
			return errSwapped
		}
		switch {
		case create && cur.Version != 0:
			return registry.CreateConflict(where, cur, next)
		case !create && cur.Version != next.Version-1:
			return registry.Conflict(where, cur, next)
		}
		_, err = call(ctx, func() (*zk.Stat, error) { return s.c.Set(s.registryPath(), body, ver) })
		switch {
		case err == nil:
			s.log.Warn("wrote the region registry", "version", next.Version, "regions", len(next.Regions))
			return nil
		case definite(err):
			continue // changed since the read: read again
		}
		rctx, cancel := s.rereadCtx(ctx)
		defer cancel()
		if rerr := s.sync(rctx); rerr == nil {
			if r, _, rerr := s.readRegistry(rctx); rerr == nil && r.Equal(next) {
				return nil
			}
		}
		return fmt.Errorf("zkstore: write the region registry at version %d into %s: %w; the outcome is unknown: read it again",
			next.Version, s.registryPath(), err)
	}
	return fmt.Errorf("zkstore: write the region registry: %s changed under %d reads in a row; retry", s.registryPath(), maxConflicts)
}
