package pgstore

import (
	"context"
	"fmt"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// registryAgrees returns the claim statement's compare of the fleet
// schedule record with the schedule the registry's copy records (none: no
// compare): lock, the two rows read FOR SHARE, their newest committed
// versions, which no write can change until the claim commits; and
// agrees, the condition — so the claim commits only while the two agree,
// whatever its statement's snapshot, and no holder claims under a schedule
// the registry does not record. // Load-bearing for uniqueness: change only with scripts/prove-search registry.
func registryAgrees() (lock, agrees string) {
	if revert.Registry {
		return "", ""
	}
	return `,
reg AS MATERIALIZED (SELECT body->>'schedule' AS schedule FROM {r} WHERE id = 1 FOR SHARE),
rec AS MATERIALIZED (SELECT schedule FROM {f} WHERE id = 1 FOR SHARE)`,
		` AND NOT EXISTS (SELECT 1 FROM reg WHERE COALESCE(reg.schedule, '') <> '' AND reg.schedule <> COALESCE((SELECT schedule FROM rec), 'v1'))`
}

// registryCompared reports that claims compare the registry's schedule
// with the fleet schedule record, so a claim that changed nothing may have
// been refused by it. // Load-bearing for uniqueness: change only with scripts/prove-search registry.
func registryCompared() bool {
	return !revert.Registry
}

// checkClaimRegistry returns lease.ErrSchedule if the region registry
// records a fleet schedule other than fs, the record, after req's claim
// changed nothing. // Load-bearing for uniqueness: change only with scripts/prove-search registry.
func (s *Store) checkClaimRegistry(ctx context.Context, req lease.ClaimRequest, fs lease.FleetSchedule) error {
	if revert.Registry {
		return nil
	}
	reg, err := s.readRegistry(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: claim in %s region %d: the claim changed nothing, and reading the region registry to learn why failed: %w; retry", req.Range, s.region, err)
	}
	return lease.CheckRecordedSchedule(reg, fs)
}
