package pgstore

import (
	"context"
	"fmt"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// The fleet schedule compared on every claim and extension: a holder
// minting under another layout than the fleet's could write the same bits
// as another holder's IDs.

// scheduleMatches is the SQL clause comparing the stored fleet schedule
// with the claimer's ($n, the statement's parameter). // Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func scheduleMatches(n string) string {
	if !revert.Schedule {
		return `COALESCE((SELECT schedule FROM {f} WHERE id = 1), 'v1') = ` + n
	}
	return n + `::text IS NOT NULL` // compares nothing
}

// scheduleCompared reports that claims compare the fleet schedule, so a
// claim that changed nothing may have been refused by it. // Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func scheduleCompared() bool {
	return !revert.Schedule
}

// checkClaimSchedule returns lease.ErrSchedule unless holder, a claimer's
// schedule, is the fleet schedule record fs. // Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func checkClaimSchedule(holder string, fs lease.FleetSchedule) error {
	if revert.Schedule {
		return nil
	}
	return lease.CheckSchedule(holder, fs)
}

// extendUnderMovedFleet decides an extension of l to target that changed
// nothing while the row still belongs to l: if the fleet schedule moved on
// from fleet (the one the statement compared), it renews under the new one
// while it agrees with the lease's own (own) until target
// (lease.CheckExtension), once (retried), or refuses with lease.ErrSchedule;
// nil, nil if the schedule is not why. // Load-bearing for uniqueness: change only with scripts/prove-search schedule.
func (s *Store) extendUnderMovedFleet(ctx context.Context, l *lease.Lease, target int64, own, fleet string, retried bool) (*lease.Lease, error) {
	if revert.Schedule {
		return nil, nil
	}
	fs, err := s.why(ctx)
	if err != nil {
		return nil, s.renewFailed(l, target, fmt.Errorf("pgstore: extend machine %d epoch %d: the update changed nothing, and reading "+
			"the fleet schedule to learn why failed: %w; retry", l.Machine, l.Token, err))
	}
	if fs.Text != fleet {
		// The fleet moved on: renew under it while the two schedules
		// agree until the mark asked for (lease.CheckExtension), with
		// the statement comparing on the fleet's schedule as read.
		if err := lease.CheckExtension(own, fs, target); err != nil {
			return nil, s.renewFailed(l, target, fmt.Errorf("pgstore: extend machine %d epoch %d: %w; stop issuing on it", l.Machine, l.Token, err))
		}
		if !retried {
			return s.extend(ctx, l, target, own, fs.Text, true)
		}
	}
	return nil, nil
}
