package registrytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/snowfence/snowfence/lease/registry"
)

// Mem is a registry.Store in memory, with the compares the stores make:
// for tests of what is built on the registry (changes, joins, the
// keeper's checks, the regions commands). Its identity is ID, or its
// address when ID is empty. A test may set the fields directly before it
// shares the Mem, and later with Set and SetFail.
type Mem struct {
	mu  sync.Mutex
	Reg registry.Registry
	ID  string
	// Fail, when set, is what every read answers (with Reg).
	Fail error
	// Reads, when set, receives a value at every read, before the read
	// answers: a test waits on it for a read in the background.
	Reads chan struct{}
	reads int
}

// Of is a registry at version len(regions) holding regions.
func Of(regions ...registry.Region) registry.Registry {
	return registry.Registry{Version: int64(len(regions)), Regions: regions}
}

// Set replaces the stored registry, as another writer would.
func (m *Mem) Set(r registry.Registry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Reg = r
}

// SetFail makes every later read answer err (nil: answer again).
func (m *Mem) SetFail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Fail = err
}

// ReadCount returns how often the registry was read.
func (m *Mem) ReadCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

var _ registry.Store = (*Mem)(nil)

// CreateRegistry writes r if no registry is stored.
func (m *Mem) CreateRegistry(_ context.Context, r registry.Registry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Reg.Version != 0 {
		return registry.CreateConflict("the copy in memory", m.Reg, r)
	}
	m.Reg = r
	return nil
}

// RegistryIdentity returns ID, or the Mem's address.
func (m *Mem) RegistryIdentity(context.Context) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ID != "" {
		return m.ID, nil
	}
	return fmt.Sprintf("memory %p", m), nil
}

// Registry returns the stored registry, and Fail.
func (m *Mem) Registry(context.Context) (registry.Registry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.Reads != nil {
		m.Reads <- struct{}{}
	}
	return m.Reg, m.Fail
}

// SetRegistry writes next if the stored registry is at next.Version-1.
func (m *Mem) SetRegistry(_ context.Context, next registry.Registry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Reg.Version != next.Version-1 {
		return registry.Conflict("the copy in memory", m.Reg, next)
	}
	m.Reg = next
	return nil
}

// MemCopies returns n copies in memory named copy-1 … copy-n.
func MemCopies(n int) []registry.Copy {
	cs := make([]registry.Copy, n)
	for i := range cs {
		cs[i] = registry.Copy{Name: fmt.Sprintf("copy-%d", i+1), Store: &Mem{}}
	}
	return cs
}

// WantIdentityError fails t unless err is a *registry.CopyIdentityError
// for name (with other as the second copy of one store, "" for a copy
// that is another store than the recorded one).
func WantIdentityError(t testing.TB, what string, err error, name, other string) {
	t.Helper()
	var ie *registry.CopyIdentityError
	if !errors.Is(err, registry.ErrCopyIdentity) || !errors.As(err, &ie) || ie.Name != name || ie.Other != other || (other == "") != (ie.Recorded != "") {
		t.Fatalf("%s: %v (%+v); want a CopyIdentityError for %s (other %q)", what, err, ie, name, other)
	}
}
