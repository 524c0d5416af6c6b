package zkstore

import (
	"context"

	"github.com/snowfence/snowfence/lease"
)

// Get returns number machine's record (a zero record if it has no
// znode), read after a sync, or lease.ErrRestored if the znode shows the
// data went back in time since this Store value last saw it (signs.go).
func (s *Store) Get(ctx context.Context, machine int) (lease.Record, error) {
	if err := s.open(); err != nil {
		return lease.Record{}, err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return lease.Record{}, err
	}
	sp := s.before(machine)
	z, err := s.read(ctx, machine)
	if err != nil {
		return lease.Record{}, err
	}
	if err := s.saw(sp, machine, z); err != nil {
		return lease.Record{}, err
	}
	return s.asRecord(machine, z), nil
}
