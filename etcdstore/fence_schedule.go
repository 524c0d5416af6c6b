package etcdstore

import (
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/internal/revert"
)

// The fleet schedule compared on every claim and extension: a holder
// minting under another layout than the fleet's could write the same bits
// as another holder's IDs.

// checkClaimSchedule returns lease.ErrSchedule unless holder, a claimer's
// schedule, is the fleet schedule key kv as read. // Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func checkClaimSchedule(holder string, kv *mvccpb.KeyValue) error {
	if revert.Schedule {
		return nil
	}
	return checkScheduleKV(holder, kv)
}

// withScheduleGuard adds to cmps, a claim's compares, that the fleet
// schedule key (key) still holds what g read, so that the claim commits
// only under the schedule it was checked against. // Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func withScheduleGuard(cmps []clientv3.Cmp, g scheduleGuard, key string) []clientv3.Cmp {
	if revert.Schedule {
		return cmps
	}
	return append(cmps, g.cmp(key))
}

// withExtensionSchedule returns lease.ErrSchedule unless a lease claimed
// under holder may reserve up to markMs under the fleet schedule g holds,
// and else adds to cmps, an extension's compares, that the key (key) still
// holds it. The guard may hold a fleet schedule other than the lease's,
// accepted by an earlier extension to a lower mark: it is checked again up
// to this one. // Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func withExtensionSchedule(cmps []clientv3.Cmp, g scheduleGuard, holder string, markMs int64, key string) ([]clientv3.Cmp, error) {
	if revert.Schedule {
		return cmps, nil
	}
	if err := g.allows(holder, markMs); err != nil {
		return cmps, err
	}
	return append(cmps, g.cmp(key)), nil
}

// scheduleMoved reports whether the fleet schedule key as a failed
// extension read it (kv) no longer passes g: the extension then checks
// the new schedule before it retries. // Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func scheduleMoved(g scheduleGuard, kv *mvccpb.KeyValue) bool {
	return !revert.Schedule && !g.holds(kv)
}

// scheduleCompared reports that a claim compares the fleet schedule key,
// so a claim that failed may have failed on it rather than on a number
// taken. // Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func scheduleCompared() bool {
	return !revert.Schedule
}
