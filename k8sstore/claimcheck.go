package k8sstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/snowfence/snowfence/lease"
)

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
// error of the read. Its compares are checkClaimSchedule
// (fence_schedule.go) and checkClaimRegistry (fence_registry.go), whose
// revert tags undo them here too: change it only with
// scripts/prove-search schedule and registry.
func (s *Store) confirmClaim(ctx context.Context, l *lease.Lease) error {
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
	if !errors.Is(err, lease.ErrSchedule) {
		return fmt.Errorf("k8sstore: claim machine %d region %d: reading the fleet schedule and the region registry again after the "+
			"claim failed: %w; the claim was given back; retry", l.Machine, s.region, err)
	}
	return fmt.Errorf("k8sstore: claim machine %d region %d: after the claim, the fleet schedule or the region registry no longer "+
		"agree with it: %w; the claim was given back", l.Machine, s.region, err)
}
