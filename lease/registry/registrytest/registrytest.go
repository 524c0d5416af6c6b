package registrytest

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease/registry"
)

// callTimeout bounds each call a check makes.
const callTimeout = 30 * time.Second

// A Harness tells the suite how to open copies of the registry of one
// kind of store.
type Harness struct {
	// New returns a store holding a fresh, empty copy of its own (a key
	// prefix, a table). Required. The harness closes what it opened when t
	// ends.
	New func(t *testing.T) registry.Store
	// Reopen returns another store value on the same copy as s, as a
	// second process would open it. Nil means s itself is used.
	Reopen func(t *testing.T, s registry.Store) registry.Store
	// Sibling returns a store value on the same copy reached another way:
	// for a lease store, its sibling on another keyspace, which shares the
	// registry's copy (and so its identity). Nil means Reopen.
	Sibling func(t *testing.T, s registry.Store) registry.Store
}

// Run runs every check of the suite against stores from h, each as a
// parallel subtest named after what it checks: one copy's reads and
// compared writes, changes over two copies, copies' identities, and a
// copy joining.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("registrytest: Harness.New is nil")
	}
	for _, c := range []struct {
		name string
		f    func(*testing.T, *suite)
	}{
		{"Registry", checkRegistry},
		{"RegistryAdds", checkRegistryAdds},
		{"RegistryCopies", checkRegistryCopies},
		{"RegistryIdentity", checkRegistryIdentity},
		{"RegistryJoin", checkRegistryJoin},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.f(t, &suite{h: h})
		})
	}
}

// suite carries the harness into the checks.
type suite struct{ h Harness }

func (s *suite) store(t *testing.T) registry.Store { return s.h.New(t) }

func (s *suite) reopen(t *testing.T, st registry.Store) registry.Store {
	if s.h.Reopen == nil {
		return st
	}
	return s.h.Reopen(t, st)
}

func (s *suite) sibling(t *testing.T, st registry.Store) registry.Store {
	if s.h.Sibling == nil {
		return s.reopen(t, st)
	}
	return s.h.Sibling(t, st)
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}
