package dynamostore

import (
	"context"
	"fmt"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// checkFleet returns lease.ErrSchedule unless schedule (a holder's, "" for
// the default) is the fleet's.
// A holder minting under another layout than the fleet's could write the
// same bits as another holder's IDs.
// Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func checkFleet(schedule string, fleet lease.FleetSchedule) error {
	if !revert.Schedule {
		return lease.CheckSchedule(schedule, fleet)
	}
	return nil
}

// extendSchedule reads the fleet schedule before an extension to markMs and
// refuses one whose schedule differs from the fleet's before markMs
// (lease.CheckExtension). The read and the conditional write that follows
// are not one atomic step (DynamoDB cannot condition a write on another
// item, and dynalite has no TransactWriteItems); lease.SetSchedule only
// accepts changes that begin at least lease.MinScheduleNotice ahead, longer
// than any mark a holder reserves (lease.MaxReserve), so a mark written
// after a read that missed a change still ends before the first instant the
// two schedules differ, and the next read sees the change.
// Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func (s *Store) extendSchedule(ctx context.Context, l *lease.Lease, markMs int64) error {
	if revert.Schedule {
		return nil
	}
	fs, err := s.FleetSchedule(ctx)
	if err != nil {
		return err
	}
	if err := lease.CheckExtension(l.Schedule, fs, markMs); err != nil {
		return fmt.Errorf("machine %d epoch %d: %w; stop issuing on it and start again with the fleet's schedule", l.Machine, l.Token, err)
	}
	return nil
}
