package zkstore

import (
	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// The fleet schedule compared on every claim and extension: a holder
// minting under another layout than the fleet's could write the same bits
// as another holder's IDs. The compare is a read after the request's sync;
// the multi-op that writes checks the schedule record's data version, so
// nothing commits on a schedule other than the one compared.

// checkClaimSchedule returns lease.ErrSchedule unless holder, a claimer's
// schedule, is the fleet schedule record fs as the claim read it.
// Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func checkClaimSchedule(holder string, fs lease.FleetSchedule) error {
	if revert.Schedule {
		return nil
	}
	return lease.CheckSchedule(holder, fs)
}

// checkExtensionSchedule returns lease.ErrSchedule unless a lease claimed
// under own may reserve up to target under fs, the fleet schedule record as
// the extension read it (lease.CheckExtension).
// Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func checkExtensionSchedule(own string, fs lease.FleetSchedule, target int64) error {
	if revert.Schedule {
		return nil
	}
	return lease.CheckExtension(own, fs, target)
}

// scheduleCheck is the op of a claim's or an extension's multi-op that
// commits it only while the fleet schedule record is at version ver, the
// one its compare read: a schedule set between the read and the write
// fails the write, which reads and compares again.
// Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func (s *Store) scheduleCheck(ver int32) []any {
	if revert.Schedule {
		return nil
	}
	return []any{&zk.CheckVersionRequest{Path: s.schedulePath(), Version: ver}}
}
