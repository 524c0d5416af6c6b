package etcdstore

import (
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/internal/revert"
)

// The claim's compare of the fleet schedule record with the schedule the
// region registry records: holders of two regions under different
// schedules could mint the same IDs.

// checkClaimRegistry returns lease.ErrSchedule if the registry key reg
// records a fleet schedule other than the schedule key sched as read. // Load-bearing for uniqueness: change only with scripts/prove-search registry.
func checkClaimRegistry(sched, reg *mvccpb.KeyValue) error {
	if revert.Registry {
		return nil
	}
	return checkRegistryKV(sched, reg)
}

// withRegistryGuard adds to cmps, a claim's compares, that the registry
// key (key) still holds what g read, so that the claim commits only while
// the registry and the schedule record agree. // Load-bearing for uniqueness: change only with scripts/prove-search registry.
func withRegistryGuard(cmps []clientv3.Cmp, g scheduleGuard, key string) []clientv3.Cmp {
	if revert.Registry {
		return cmps
	}
	return append(cmps, g.cmp(key))
}

// registryMoved reports whether the registry key as a failed claim read it
// (kv) no longer passes g: the claim then checks it again before it
// retries. // Load-bearing for uniqueness: change only with scripts/prove-search registry.
func registryMoved(g scheduleGuard, kv *mvccpb.KeyValue) bool {
	return !revert.Registry && !g.holds(kv)
}
