package etcdstore

import (
	"context"
	"fmt"

	"github.com/snowfence/snowfence/lease/registry"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var _ registry.Store = (*Store)(nil)

// Registry returns the region registry kept under <prefix>/registry, shared
// by every region of the prefix: the zero Registry if it was never
// written.
func (s *Store) Registry(ctx context.Context) (registry.Registry, error) {
	if err := s.open(); err != nil {
		return registry.Registry{}, err
	}
	kv, err := s.registryKV(ctx)
	if err != nil {
		return registry.Registry{}, err
	}
	return parseRegistry(kv)
}

// SetRegistry writes next under <prefix>/registry if the registry stored
// there is at version next.Version-1 (the key absent, for version 1), in
// one transaction that compares the key's mod revision (its create
// revision 0, while absent) with the one read, so no other write can come
// between the read and the put. A stored registry equal to next is
// success (a retry, or a second copy under the same prefix); any other is
// registry.ErrConflict, naming the version found.
func (s *Store) SetRegistry(ctx context.Context, next registry.Registry) error {
	return s.writeRegistry(ctx, next, false)
}

// CreateRegistry writes r under <prefix>/registry if the key is absent
// (a transaction comparing its create revision with 0), whatever r's
// version; a stored registry equal to r is success, any other
// registry.ErrConflict.
func (s *Store) CreateRegistry(ctx context.Context, r registry.Registry) error {
	return s.writeRegistry(ctx, r, true)
}

// RegistryIdentity returns "etcd cluster <cluster ID in hex> key
// <prefix>/registry": the cluster ID from the header of a read of the
// registry's key, which etcd gives every cluster at its bootstrap (from
// its members' peer URLs and its initial cluster token: two clusters
// bootstrapped with the same ones share it, so give each its own token).
// A snapshot restored with the same peer URLs and token keeps it; with a
// new token it changes.
func (s *Store) RegistryIdentity(ctx context.Context) (string, error) {
	if err := s.open(); err != nil {
		return "", err
	}
	resp, err := s.get(ctx, s.keys.registry, clientv3.WithCountOnly())
	if err != nil {
		return "", fmt.Errorf("etcdstore: read the region registry %s: %w", s.keys.registry, err)
	}
	if resp.Header == nil || resp.Header.ClusterId == 0 {
		return "", fmt.Errorf("etcdstore: the answer to a read of %s names no cluster ID", s.keys.registry)
	}
	return fmt.Sprintf("etcd cluster %016x key %s", resp.Header.ClusterId, s.keys.registry), nil
}

// writeRegistry is SetRegistry, or with create CreateRegistry.
func (s *Store) writeRegistry(ctx context.Context, next registry.Registry, create bool) error {
	if err := s.open(); err != nil {
		return err
	}
	body, err := registry.Encode(next)
	if err != nil {
		return fmt.Errorf("etcdstore: write the region registry: %w", err)
	}
	key := s.keys.registry
	kv, err := s.registryKV(ctx)
	if err != nil {
		return err
	}
	cur, err := parseRegistry(kv)
	if err != nil {
		return err
	}
	if create && cur.Version != 0 {
		return registry.CreateConflict(key, cur, next)
	}
	if !create && cur.Version != next.Version-1 {
		return registry.Conflict(key, cur, next)
	}
	cmp := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	if kv != nil {
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)
	}
	resp, err := s.txn(ctx, []clientv3.Cmp{cmp}, []clientv3.Op{clientv3.OpPut(key, string(body))}, []clientv3.Op{clientv3.OpGet(key)})
	if err != nil {
		// The put may have committed: read it back before saying so.
		rctx, cancel := s.detached(ctx)
		defer cancel()
		if r, rerr := s.Registry(rctx); rerr == nil && r.Equal(next) {
			return nil
		}
		return fmt.Errorf("etcdstore: write the region registry at version %d to %s: %w; it may have committed: read it again", next.Version, key, err)
	}
	if !resp.Succeeded {
		cur, err := parseRegistry(kvAt(resp, 0))
		if err != nil {
			return err
		}
		if create {
			return registry.CreateConflict(key, cur, next)
		}
		return registry.Conflict(key, cur, next) // it changed between the read and the write
	}
	s.log.Warn("wrote the region registry", "version", next.Version, "regions", len(next.Regions), "key", key)
	return nil
}

// registryKV reads the registry's key: nil if absent.
func (s *Store) registryKV(ctx context.Context) (*mvccpb.KeyValue, error) {
	resp, err := s.get(ctx, s.keys.registry)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: read the region registry %s: %w", s.keys.registry, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return resp.Kvs[0], nil
}

// parseRegistry decodes the registry's key; nil is the zero Registry.
func parseRegistry(kv *mvccpb.KeyValue) (registry.Registry, error) {
	if kv == nil {
		return registry.Registry{}, nil
	}
	r, err := registry.Decode(kv.Value)
	if err != nil {
		return registry.Registry{}, fmt.Errorf("etcdstore: key %s holds %q: %v (was it written by hand?); "+
			"put back the value of another region's copy of the registry (snowfence regions list there), or delete the key if no registry was ever meant to be here",
			kv.Key, kv.Value, err)
	}
	return r, nil
}
