package explore

import (
	"context"
	"errors"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/zkstore"
)

// TEMPORARY (remove when zkstore implements lease.Admin, branch zk-admin):
// zkAdmin returns s as a lease.Admin. Until zkstore has the operator's
// actions, a shim answers them with errZKAdminMissing (History with the
// journal's "not built yet", so the oracle skips the world's journal
// checks): worlds without restores run, and a restore's operator step
// fails the world with EXPLORE SETUP naming the missing RaiseMarks.
func zkAdmin(s *zkstore.Store) (lease.Admin, error) {
	if a, ok := any(s).(lease.Admin); ok {
		return a, nil
	}
	return zkShim{s}, nil
}

var errZKAdminMissing = errors.New("zkstore: lease.Admin is not built yet (branch zk-admin); the journal is not built yet")

type zkShim struct{ *zkstore.Store }

func (z zkShim) List(context.Context) ([]lease.Record, error) { return nil, errZKAdminMissing }
func (z zkShim) Quarantine(context.Context, int) error        { return errZKAdminMissing }
func (z zkShim) Unquarantine(context.Context, int) error      { return errZKAdminMissing }
func (z zkShim) RaiseMarks(context.Context, lease.Range, int64) (int, error) {
	return 0, errZKAdminMissing
}
func (z zkShim) SetFleetSchedule(context.Context, int64, string) (lease.FleetSchedule, error) {
	return lease.FleetSchedule{}, errZKAdminMissing
}
func (z zkShim) History(context.Context, int) ([]lease.JournalEntry, error) {
	return nil, errZKAdminMissing
}
func (z zkShim) Registry(context.Context) (registry.Registry, error) {
	return registry.Registry{}, nil
}
func (z zkShim) RegistryIdentity(context.Context) (string, error) { return "", errZKAdminMissing }
func (z zkShim) SetRegistry(context.Context, registry.Registry) error {
	return errZKAdminMissing
}
func (z zkShim) CreateRegistry(context.Context, registry.Registry) error {
	return errZKAdminMissing
}
func (z zkShim) FleetSchedule(context.Context) (lease.FleetSchedule, error) {
	return lease.FleetSchedule{}, errZKAdminMissing
}
func (z zkShim) AdminKeyspace(index int) (lease.Admin, error) {
	ks, err := z.Store.Keyspace(index)
	if err != nil {
		return nil, err
	}
	return zkShim{ks.(*zkstore.Store)}, nil
}
