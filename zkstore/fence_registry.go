package zkstore

import (
	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// The claim's compare of the fleet schedule record with the schedule the
// region registry's copy records: holders of two regions under different
// schedules could mint the same IDs.

// checkClaimRegistry returns lease.ErrSchedule if reg, the registry's copy
// as the claim read it, records a fleet schedule other than fs, the record.
// Load-bearing for uniqueness: change only with scripts/prove-search registry.
func checkClaimRegistry(reg registry.Registry, fs lease.FleetSchedule) error {
	if revert.Registry {
		return nil
	}
	return lease.CheckRecordedSchedule(reg, fs)
}

// registryCheck is the op of a claim's multi-op that commits it only while
// the registry's copy is at version ver, the one its compare read: a
// registry written between the read and the write fails the claim, which
// reads and compares again.
// Load-bearing for uniqueness: change only with scripts/prove-search registry.
func (s *Store) registryCheck(ver int32) []any {
	if revert.Registry {
		return nil
	}
	return []any{&zk.CheckVersionRequest{Path: s.registryPath(), Version: ver}}
}
