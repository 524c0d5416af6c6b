package etcdstore

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

var _ lease.HolderCounter = (*Store)(nil)

// CountHolders implements lease.HolderCounter: the owner keys of the
// region that no quarantine key stands beside, from two keys-only reads.
// An owner key is bound to its holder's etcd lease and vanishes with it, so
// every owner key is a live holder's (nowMs is not needed); List would
// also look up each holder's etcd lease, one request per holder.
func (s *Store) CountHolders(ctx context.Context, _ int64) (int, error) {
	if err := s.open(); err != nil {
		return 0, err
	}
	owners, err := s.get(ctx, s.keys.kindPrefix(kindOwner), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, fmt.Errorf("etcdstore: count the holders of region %d: %w", s.region, err)
	}
	if len(owners.Kvs) == 0 {
		return 0, nil
	}
	quarantined, err := s.get(ctx, s.keys.kindPrefix(kindQuarantine), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, fmt.Errorf("etcdstore: count the holders of region %d: %w", s.region, err)
	}
	q := make(map[int]bool, len(quarantined.Kvs))
	for _, kv := range quarantined.Kvs {
		if _, n, ok := s.keys.parse(string(kv.Key)); ok {
			q[n] = true
		}
	}
	n := 0
	for _, kv := range owners.Kvs {
		if _, m, ok := s.keys.parse(string(kv.Key)); ok && !q[m] {
			n++
		}
	}
	return n, nil
}
