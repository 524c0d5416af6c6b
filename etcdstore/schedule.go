package etcdstore

import (
	"context"
	"errors"

	"github.com/snowfence/snowfence/lease"
)

// FleetSchedule implements lease.Store. (Placeholder until the fleet
// schedule is stored.)
func (s *Store) FleetSchedule(ctx context.Context) (lease.FleetSchedule, error) {
	return lease.FleetSchedule{Text: lease.DefaultFleetSchedule}, nil
}

// SetFleetSchedule implements lease.Store. (Placeholder.)
func (s *Store) SetFleetSchedule(ctx context.Context, prev int64, text string) (lease.FleetSchedule, error) {
	return lease.FleetSchedule{}, errors.New("etcdstore: fleet schedule not implemented yet")
}
