package k8sstore

import (
	"context"
	"fmt"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// The claim's compare of the holder's schedule with the fleet schedule
// record, and of the record with the schedule the region registry's copy
// records: holders of two regions under different schedules could mint
// the same IDs. Both records are objects of their own, which the claim's
// JSON patch cannot test, so the claim reads them before its write
// (claimSchedule) and again after it (confirmClaim), and gives back a
// claim made while they came to differ, before anything is issued on it —
// as dynamostore does, whose conditional writes also see one item only. A
// lease is thus handed out only if the compares held after it was
// claimed, as if they were part of the write; a record changed later is
// one changed after the claim, as on any store.

// checkClaimRegistry returns lease.ErrSchedule if reg, the registry's copy
// as the claim read it, records a fleet schedule other than fs, the record.
// Load-bearing for uniqueness: change only with scripts/prove-search registry.
func checkClaimRegistry(reg registry.Registry, fs lease.FleetSchedule) error {
	if revert.Registry {
		return nil
	}
	return lease.CheckRecordedSchedule(reg, fs)
}

// claimSchedule reads the fleet schedule record and the registry's copy
// and refuses a claim under schedule with lease.ErrSchedule unless it is
// the record's and the registry records none or the record's.
func (s *Store) claimSchedule(ctx context.Context, schedule string) error {
	fs, _, _, err := s.readSchedule(ctx)
	if err != nil {
		return err
	}
	reg, _, err := s.readRegistry(ctx)
	if err != nil {
		return err
	}
	if err := checkClaimSchedule(schedule, fs); err != nil {
		return err
	}
	return checkClaimRegistry(reg, fs)
}

// confirmClaim reads the two records again after the claim of l committed
// and, unless the claim's compares still hold, gives l back (Release,
// keeping its mark) and returns the reason: lease.ErrSchedule, or the
// error of the read.
// Load-bearing for uniqueness: change only with scripts/prove-search registry.
func (s *Store) confirmClaim(ctx context.Context, l *lease.Lease) error {
	if revert.Registry && revert.Schedule {
		return nil
	}
	rctx, cancel := s.rereadCtx(ctx)
	defer cancel()
	err := s.claimSchedule(rctx, l.Schedule)
	if err == nil {
		return nil
	}
	if rerr := s.Release(rctx, l, max(l.MarkMs, l.StartMs)); rerr != nil {
		s.log.Warn("giving back a claim made while the fleet schedule or the registry came to differ failed; it frees itself at its mark",
			"machine", l.Machine, "epoch", l.Token, "error", rerr)
	}
	return fmt.Errorf("k8sstore: claim machine %d region %d: after the claim, the fleet schedule or the region registry no longer "+
		"agree with it: %w; the claim was given back", l.Machine, s.region, err)
}
