package registrytest

import (
	"errors"
	"testing"

	"github.com/snowfence/snowfence/lease/registry"
)

// The checks of a registry copy's identity (RegistryIdentity) and of a
// copy joining (CreateRegistry, registry.Join).

func mustIdentity(t *testing.T, rs registry.Store, what string) string {
	t.Helper()
	id, err := rs.RegistryIdentity(ctxFor(t))
	if err != nil || id == "" {
		t.Fatalf("RegistryIdentity of %s = %q, %v; want an identity", what, id, err)
	}
	return id
}

// checkRegistryIdentity: a store reports one identity through every Store
// value on its keyspace — read twice, through another store value, and
// through a sibling (Harness.Sibling: a lease store's other keyspace; they
// share the registry's copy)
// — and a store on another keyspace of its own (another prefix, table)
// another.
func checkRegistryIdentity(t *testing.T, s *suite) {
	st := s.store(t)
	id := mustIdentity(t, st, "a new store")
	if again := mustIdentity(t, st, "the store, again"); again != id {
		t.Errorf("RegistryIdentity read twice: %q then %q; want one identity", id, again)
	}
	if other := mustIdentity(t, s.reopen(t, st), "another store value"); other != id {
		t.Errorf("RegistryIdentity through another store value = %q; want the store's %q", other, id)
	}
	if got := mustIdentity(t, s.sibling(t, st), "a sibling"); got != id {
		t.Errorf("RegistryIdentity through a sibling (Harness.Sibling) = %q; want the store's %q (one copy of the registry)", got, id)
	}
	if fresh := mustIdentity(t, s.store(t), "a store of its own"); fresh == id {
		t.Errorf("RegistryIdentity of a store on another keyspace of its own = %q, the same as the first store's; want another", fresh)
	}
}

// checkRegistryJoin: CreateRegistry writes a registry at any version only
// where none is (a retry of the same succeeds, another is
// registry.ErrConflict, and SetRegistry goes on from it); JoinRegistry
// gives a new store the registry of two others, recording it, and refuses
// to join one of their stores again under another name.
func checkRegistryJoin(t *testing.T, s *suite) {
	ctx := ctxFor(t)
	a, b, c := s.store(t), s.store(t), s.store(t)
	copies := []registry.Copy{{Name: "copy-a", Store: a}, {Name: "copy-b", Store: b}}
	for _, name := range []string{"eu-west-1", "us-east-1"} {
		if _, err := registry.AddRegion(ctx, copies, name, 1000, Limit); err != nil {
			t.Fatalf("AddRegion(%s): %v", name, err)
		}
	}
	ra := MustRegistry(t, a)
	if len(ra.CopyIdentities) != 2 || ra.CopyIdentities[0] != mustIdentity(t, a, "copy-a") || ra.CopyIdentities[1] != mustIdentity(t, b, "copy-b") {
		t.Fatalf("identities recorded %q; want copy-a's and copy-b's", ra.CopyIdentities)
	}
	sib := s.sibling(t, a)
	if _, err := registry.Join(ctx, copies, registry.Copy{Name: "copy-c", Store: sib}, nil); !errors.Is(err, registry.ErrCopyIdentity) {
		t.Fatalf("Join of copy-a's store under another name (a sibling) = %v; want ErrCopyIdentity", err)
	}
	joined, err := registry.Join(ctx, copies, registry.Copy{Name: "copy-c", Store: c}, nil)
	if err != nil {
		t.Fatalf("JoinRegistry(copy-c): %v", err)
	}
	if joined.Version != 3 || len(joined.Copies) != 3 || len(joined.CopyIdentities) != 3 {
		t.Fatalf("registry after the join = %+v; want version 3 recording three copies", joined)
	}
	for name, st := range map[string]registry.Store{"copy-a": a, "copy-b": b, "copy-c": c} {
		if r := MustRegistry(t, st); !r.Equal(joined) {
			t.Errorf("%s after the join = %+v; want %+v", name, r, joined)
		}
	}
	if err := c.CreateRegistry(ctx, joined); err != nil {
		t.Errorf("CreateRegistry of the stored registry again (a retry) = %v; want nil", err)
	}
	if err := c.CreateRegistry(ctx, ra); !errors.Is(err, registry.ErrConflict) {
		t.Errorf("CreateRegistry over a stored registry = %v; want registry.ErrConflict", err)
	}
	all := append(copies, registry.Copy{Name: "copy-c", Store: c})
	if g, err := registry.AddRegion(ctx, all, "ap-south-1", 2000, Limit); err != nil || g.Number != 2 {
		t.Fatalf("AddRegion with the joined copy = %+v, %v; want number 2", g, err)
	}
	if r := MustRegistry(t, c); r.Version != 4 {
		t.Errorf("the joined copy after an add is at version %d; want 4", r.Version)
	}
}
