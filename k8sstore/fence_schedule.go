package k8sstore

import (
	"context"
	"fmt"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// The fleet schedule compared on every claim and extension: a holder
// minting under another layout than the fleet's could write the same bits
// as another holder's IDs. Kubernetes cannot make the compare part of the
// write: a JSON patch tests one object, and the schedule lives in another
// (<prefix>-schedule), as DynamoDB conditions a write on one item only.
// So, as dynamostore does, the compare is a quorum read of the record
// before the write, and a claim is compared again after its write
// (confirmClaim, fence_registry.go). That is enough because
// lease.SetSchedule only accepts a change whose first difference from the
// old schedule is at least lease.MinScheduleNotice (1 h) past every clock
// and mark, longer than any mark a holder reserves (lease.MaxReserve): a
// mark written after a read that missed the change still ends before the
// first instant the two schedules differ, and the next renewal's read sees
// the change (lease.CheckExtension refuses to reserve past that instant).
// The store does not implement lease.UnusedScheduleSetter, which would
// skip the notice on a store holding no lease record, for the same reason:
// no write of the schedule can check every keyspace's objects.

// checkClaimSchedule returns lease.ErrSchedule unless holder, a claimer's
// schedule, is the fleet schedule record fs as the claim read it.
// Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func checkClaimSchedule(holder string, fs lease.FleetSchedule) error {
	if revert.Schedule {
		return nil
	}
	return lease.CheckSchedule(holder, fs)
}

// extendSchedule reads the fleet schedule record before an extension of l
// to target and refuses one whose schedule differs from the fleet's before
// target (lease.CheckExtension): a read before the write, enough by the
// notice rule (above).
// Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func (s *Store) extendSchedule(ctx context.Context, l *lease.Lease, schedule string, target int64) error {
	if revert.Schedule {
		return nil
	}
	fs, _, _, err := s.readSchedule(ctx)
	if err != nil {
		return fmt.Errorf("k8sstore: extend machine %d epoch %d: read the fleet schedule: %w", l.Machine, l.Token, err)
	}
	if err := lease.CheckExtension(schedule, fs, target); err != nil {
		return fmt.Errorf("k8sstore: extend machine %d epoch %d: %w; stop issuing on it and start again with the fleet's schedule", l.Machine, l.Token, err)
	}
	return nil
}
