package service

import (
	"context"
	"fmt"
	"sync"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// memRegistry is a registry.Store in memory, with the compare the stores
// make; it counts its reads and, if reads is set, reports each on it.
type memRegistry struct {
	mu    sync.Mutex
	reg   registry.Registry
	n     int
	fail  error
	reads chan struct{}
}

func (m *memRegistry) Registry(context.Context) (registry.Registry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	if m.reads != nil {
		m.reads <- struct{}{}
	}
	return m.reg, m.fail
}

func (m *memRegistry) SetRegistry(_ context.Context, next registry.Registry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reg.Version != next.Version-1 {
		return registry.Conflict("the copy in memory", m.reg, next)
	}
	m.reg = next
	return nil
}

func (m *memRegistry) CreateRegistry(_ context.Context, r registry.Registry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reg.Version != 0 {
		return registry.CreateConflict("the copy in memory", m.reg, r)
	}
	m.reg = r
	return nil
}

// RegistryIdentity is the copy's address: every memRegistry is a store of
// its own.
func (m *memRegistry) RegistryIdentity(context.Context) (string, error) {
	return fmt.Sprintf("memory %p", m), nil
}

// readCount returns how often the registry was read.
func (m *memRegistry) readCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// set replaces the stored registry.
func (m *memRegistry) set(r registry.Registry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reg = r
}

// registryOf is a registry at version len(regions) holding regions.
func registryOf(regions ...registry.Region) registry.Registry {
	return registry.Registry{Version: int64(len(regions)), Regions: regions}
}

// memStore is a lease store whose region registry is m and whose fleet
// schedule record is fleet; only Close, the registry and the record are
// used.
type memStore struct {
	lease.Admin // nil: only the methods below are called
	m           *memRegistry
	fleet       lease.FleetSchedule
	closed      int
}

func (s *memStore) FleetSchedule(context.Context) (lease.FleetSchedule, error) { return s.fleet, nil }

func (s *memStore) Registry(ctx context.Context) (registry.Registry, error) { return s.m.Registry(ctx) }
func (s *memStore) SetRegistry(ctx context.Context, next registry.Registry) error {
	return s.m.SetRegistry(ctx, next)
}
func (s *memStore) CreateRegistry(ctx context.Context, r registry.Registry) error {
	return s.m.CreateRegistry(ctx, r)
}
func (s *memStore) RegistryIdentity(ctx context.Context) (string, error) {
	return s.m.RegistryIdentity(ctx)
}
func (s *memStore) Close() error { s.closed++; return nil }

// RegistryReader returns s: its registry, identity and record above.
func (s *memStore) RegistryReader() lease.RegistryReader { return s }
