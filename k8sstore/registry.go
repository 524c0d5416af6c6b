package k8sstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/snowfence/snowfence/lease/registry"
)

var _ registry.Store = (*Store)(nil)

// The store's copy of the region registry is the object <prefix>-registry,
// shared by every keyspace of the prefix, its annotation
// snowfence.io/registry holding registry.Encode's JSON; absent while none
// was written. Claims compare the schedule it records with the fleet
// schedule record (fence_registry.go).

// registryKey is the annotation of the registry's copy.
const registryKey = "snowfence.io/registry"

func (s *Store) registryName() string { return s.cfg.Prefix + "-registry" }

// readRegistry reads the registry's copy, with the object as read.
func (s *Store) readRegistry(ctx context.Context) (registry.Registry, metaObject, error) {
	m, err := s.readMeta(ctx, s.registryName(), registryKey)
	if err != nil || !m.exists {
		return registry.Registry{}, m, err
	}
	r, err := registry.Decode([]byte(m.raw))
	if err != nil {
		return registry.Registry{}, metaObject{}, fmt.Errorf("%w: lease %s in namespace %s holds %q in %s: %v (was it written by hand?); "+
			"put back the registry of another region's copy (snowfence regions list there)", ErrNotRecord, s.registryName(),
			s.cfg.Namespace, m.raw, registryKey, err)
	}
	return r, m, nil
}

// Registry implements registry.Reader: the registry read with a quorum
// read; the zero Registry when none was written.
func (s *Store) Registry(ctx context.Context) (registry.Registry, error) {
	if err := s.open(); err != nil {
		return registry.Registry{}, err
	}
	r, _, err := s.readRegistry(ctx)
	return r, err
}

// RegistryIdentity implements registry.Reader: "kubernetes origin <id>
// uid <uid> namespace <ns> prefix <prefix>", with the random id of the
// prefix's origin object (created with the first claim, or here if none
// was made yet) and the object's UID, which the API server assigns. Every
// Store value and keyspace on the prefix reads the same; a prefix made
// anew — or another cluster's — has another origin id, and a copy of the
// prefix's objects made through the API (a namespace backup restored into
// another cluster while the original runs) keeps the id, which is data,
// but not the UID. A copy of the whole etcd under another API server
// keeps both, as a physical copy of a PostgreSQL cluster keeps its system
// identifier (docs/regions.md).
func (s *Store) RegistryIdentity(ctx context.Context) (string, error) {
	if err := s.open(); err != nil {
		return "", err
	}
	or, err := s.readOrigin(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("kubernetes origin %s uid %s namespace %s prefix %s", or.o.ID, or.uid, s.cfg.Namespace, s.cfg.Prefix), nil
}

// SetRegistry implements registry.Store: it writes next if the stored
// registry is at version next.Version-1 (none written, for version 1): a
// Create when there is no object, else one JSON patch testing the
// resourceVersion and the registry read. A stored registry equal to next
// is success (a retry, or a second copy on the same prefix); any other
// version registry.ErrConflict. After an error of unknown outcome it reads
// the registry again and reports success if it is next.
func (s *Store) SetRegistry(ctx context.Context, next registry.Registry) error {
	return s.writeRegistry(ctx, next, false)
}

// CreateRegistry implements registry.Store: it writes r if no registry is
// stored, whatever r's version; a stored registry equal to r is success,
// any other registry.ErrConflict.
func (s *Store) CreateRegistry(ctx context.Context, r registry.Registry) error {
	return s.writeRegistry(ctx, r, true)
}

// writeRegistry is SetRegistry, or with create CreateRegistry.
func (s *Store) writeRegistry(ctx context.Context, next registry.Registry, create bool) error {
	if err := s.open(); err != nil {
		return err
	}
	body, err := registry.Encode(next)
	if err != nil {
		return fmt.Errorf("k8sstore: write the region registry: %w", err)
	}
	where := fmt.Sprintf("the registry's object %s in namespace %s", s.registryName(), s.cfg.Namespace)
	for range maxConflicts {
		cur, m, err := s.readRegistry(ctx)
		if err != nil {
			return err
		}
		switch {
		case create && cur.Version != 0:
			return registry.CreateConflict(where, cur, next)
		case !create && cur.Version != next.Version-1:
			return registry.Conflict(where, cur, next)
		}
		err = s.writeMeta(ctx, s.registryName(), registryKey, m, string(body))
		switch {
		case err == nil:
			s.log.Warn("wrote the region registry", "version", next.Version, "regions", len(next.Regions))
			return nil
		case errors.Is(err, ErrForbidden), errors.Is(err, ErrNoNamespace):
			return fmt.Errorf("k8sstore: write the region registry: %w", err)
		case definite(err):
			continue // changed since the read: read again
		}
		rctx, cancel := s.rereadCtx(ctx)
		r, _, rerr := s.readRegistry(rctx)
		cancel()
		if rerr == nil && r.Equal(next) {
			return nil
		}
		return fmt.Errorf("k8sstore: write the region registry at version %d into %s: %w; the outcome is unknown: read it again",
			next.Version, s.registryName(), err)
	}
	return fmt.Errorf("k8sstore: write the region registry: %s changed under %d reads in a row; retry", s.registryName(), maxConflicts)
}
