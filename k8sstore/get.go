package k8sstore

import (
	"context"

	"github.com/snowfence/snowfence/lease"
)

// Get returns number machine's record (a zero record if it has no
// object), read with a quorum read, or lease.ErrRestored if the object
// shows the data went back in time since this Store value last saw it
// (signs.go).
func (s *Store) Get(ctx context.Context, machine int) (lease.Record, error) {
	if err := s.open(); err != nil {
		return lease.Record{}, err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return lease.Record{}, err
	}
	sp := s.before(machine)
	o, err := s.get(ctx, machine)
	if err != nil {
		return lease.Record{}, err
	}
	if err := s.saw(sp, machine, o); err != nil {
		return lease.Record{}, err
	}
	return s.asRecord(machine, o), nil
}
