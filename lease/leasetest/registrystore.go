package leasetest

import (
	"context"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// RegistryStore is a lease store in memory with a region registry (Mem)
// and a fleet-schedule record (Fleet) and nothing else: for tests of what
// reads them — the service's region checks, the CLI's regions commands.
// Only the registry's methods, FleetSchedule, RegistryReader and Close are
// implemented; any other method of lease.Admin panics.
type RegistryStore struct {
	lease.Admin // nil: only the methods below are called
	// Mem is the registry's copy; it must be set.
	Mem *registrytest.Mem
	// Fleet is the fleet-schedule record FleetSchedule answers.
	Fleet lease.FleetSchedule
	// Closes counts the calls of Close.
	Closes int
	// Records are the lease records of each keyspace (nil: none), which
	// AdminKeyspace's List answers.
	Records map[int][]lease.Record
}

// AdminKeyspace is keyspace index of s: its List answers Records[index];
// nothing else of it is called.
func (s *RegistryStore) AdminKeyspace(index int) (lease.Admin, error) {
	return registryKeyspace{s, index}, nil
}

// registryKeyspace is one keyspace of a RegistryStore.
type registryKeyspace struct {
	*RegistryStore
	index int
}

// List returns the keyspace's records.
func (k registryKeyspace) List(context.Context) ([]lease.Record, error) {
	return k.Records[k.index], nil
}

// Close closes nothing (the store's Closes counts the store's).
func (k registryKeyspace) Close() error { return nil }

// FleetSchedule returns Fleet.
func (s *RegistryStore) FleetSchedule(context.Context) (lease.FleetSchedule, error) {
	return s.Fleet, nil
}

// Registry reads Mem.
func (s *RegistryStore) Registry(ctx context.Context) (registry.Registry, error) {
	return s.Mem.Registry(ctx)
}

// SetRegistry writes Mem.
func (s *RegistryStore) SetRegistry(ctx context.Context, next registry.Registry) error {
	return s.Mem.SetRegistry(ctx, next)
}

// CreateRegistry creates Mem's registry.
func (s *RegistryStore) CreateRegistry(ctx context.Context, r registry.Registry) error {
	return s.Mem.CreateRegistry(ctx, r)
}

// RegistryIdentity is Mem's identity.
func (s *RegistryStore) RegistryIdentity(ctx context.Context) (string, error) {
	return s.Mem.RegistryIdentity(ctx)
}

// Close counts the call.
func (s *RegistryStore) Close() error { s.Closes++; return nil }

// RegistryReader returns s: its registry, identity and record.
func (s *RegistryStore) RegistryReader() lease.RegistryReader { return s }
