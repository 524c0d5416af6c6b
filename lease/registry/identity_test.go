package registry_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// versions returns the version of every copy.
func versions(t *testing.T, cs []registry.Copy) []int64 {
	t.Helper()
	var vs []int64
	for _, c := range cs {
		r, err := c.Store.Registry(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, r.Version)
	}
	return vs
}

// The first change records each copy's identity beside its name; a copy
// whose name now reaches another store is refused, by every change, before
// anything is written.
func TestRegistryRecordsCopyIdentities(t *testing.T) {
	ctx := context.Background()
	cs := registrytest.MemCopies(2)
	if _, err := registry.AddRegion(ctx, cs, "eu-west-1", 1, 8); err != nil {
		t.Fatal(err)
	}
	r, _ := cs[1].Store.Registry(ctx)
	for i, c := range cs {
		id, _ := c.Store.RegistryIdentity(ctx)
		if len(r.CopyIdentities) != 2 || r.CopyIdentities[i] != id {
			t.Fatalf("recorded identities %q; want copy %d's %q at %d", r.CopyIdentities, i+1, id, i)
		}
	}
	// copy-2's name now reaches another store holding the same registry
	// (a copy of it, say).
	moved := []registry.Copy{cs[0], {Name: "copy-2", Store: &registrytest.Mem{Reg: r}}}
	_, err := registry.AddRegion(ctx, moved, "us-east-1", 2, 8)
	registrytest.WantIdentityError(t, "add with copy-2 another store", err, "copy-2", "")
	_, err = registry.Sync(ctx, moved)
	registrytest.WantIdentityError(t, "sync with copy-2 another store", err, "copy-2", "")
	if vs := versions(t, moved); !slices.Equal(vs, []int64{1, 1}) {
		t.Fatalf("versions after the refused changes %v, want [1 1]", vs)
	}
	if _, err := registry.AddRegion(ctx, cs, "us-east-1", 2, 8); err != nil {
		t.Fatalf("add with the recorded stores: %v", err)
	}
}

// Two names for one store are refused, before and after the first change.
func TestRegistryRefusesOneStoreTwice(t *testing.T) {
	ctx := context.Background()
	cs := registrytest.MemCopies(2)
	twice := []registry.Copy{cs[0], {Name: "copy-9", Store: cs[0].Store}}
	_, err := registry.AddRegion(ctx, twice, "eu-west-1", 1, 8)
	registrytest.WantIdentityError(t, "create with one store twice", err, "copy-9", "copy-1")
	if vs := versions(t, cs); !slices.Equal(vs, []int64{0, 0}) {
		t.Fatalf("versions after the refused create %v, want [0 0]", vs)
	}
}

// A registry written before identities were kept records them at its next
// change.
func TestRegistryRecordsIdentitiesOfAnOldRegistry(t *testing.T) {
	ctx := context.Background()
	cs := registrytest.MemCopies(2)
	old := registry.Registry{Version: 1, Regions: []registry.Region{{Name: "eu-west-1", Number: 0, CreatedMs: 1}}, Copies: []string{"copy-1", "copy-2"}}
	for _, c := range cs {
		c.Store.(*registrytest.Mem).Reg = old
	}
	if _, err := registry.AddRegion(ctx, cs, "us-east-1", 2, 8); err != nil {
		t.Fatal(err)
	}
	r, _ := cs[0].Store.Registry(ctx)
	if len(r.CopyIdentities) != 2 {
		t.Fatalf("identities after the next change %q, want two", r.CopyIdentities)
	}
}

// A store that joins gets the registry, one version on, recording it; from
// then on every change must name it, and a holder's store has the regions.
func TestJoinRegistry(t *testing.T) {
	ctx := context.Background()
	cs := registrytest.MemCopies(2)
	joining := registry.Copy{Name: "copy-3", Store: &registrytest.Mem{}}
	if _, err := registry.Join(ctx, cs, joining, nil); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("join with no registry written: %v, want ErrInvalid", err)
	}
	if _, err := registry.AddRegion(ctx, cs, "eu-west-1", 1, 8); err != nil {
		t.Fatal(err)
	}
	_, err := registry.Join(ctx, cs, registry.Copy{Name: "copy-3", Store: cs[1].Store}, nil)
	registrytest.WantIdentityError(t, "join an existing copy's store", err, "copy-3", "copy-2")
	full := registry.Copy{Name: "copy-3", Store: &registrytest.Mem{Reg: registry.Registry{Version: 1, Regions: []registry.Region{{Name: "mars-1", CreatedMs: 1}}}}}
	if _, err := registry.Join(ctx, cs, full, nil); !errors.Is(err, registry.ErrDiverged) {
		t.Fatalf("join a store holding a registry: %v, want ErrDiverged", err)
	}
	if _, err := registry.Join(ctx, cs[:1], joining, nil); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("join naming one copy of two: %v, want ErrInvalid", err)
	}
	if vs := versions(t, append(slices.Clone(cs), joining)); !slices.Equal(vs, []int64{1, 1, 0}) {
		t.Fatalf("versions after the refused joins %v, want [1 1 0]", vs)
	}
	r, err := registry.Join(ctx, cs, joining, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(cs), joining)
	if !slices.Equal(r.Copies, []string{"copy-1", "copy-2", "copy-3"}) || len(r.CopyIdentities) != 3 || r.Version != 2 {
		t.Fatalf("registry after the join %+v; want version 2 recording three copies with identities", r)
	}
	for i, c := range all {
		if got, _ := c.Store.Registry(ctx); !got.Equal(r) {
			t.Fatalf("copy %d after the join: %+v, want %+v", i+1, got, r)
		}
	}
	if _, err := registry.Join(ctx, cs, joining, nil); err != nil {
		t.Fatalf("the same join again: %v, want nil (done already)", err)
	}
	if _, err := registry.AddRegion(ctx, cs, "us-east-1", 2, 8); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("add without the joined copy: %v, want ErrInvalid", err)
	}
	g, err := registry.AddRegion(ctx, all, "us-east-1", 2, 8)
	if err != nil || g.Number != 1 {
		t.Fatalf("add with every copy: %+v, %v; want number 1", g, err)
	}
	if got, _ := joining.Store.Registry(ctx); got.Version != 3 {
		t.Fatalf("the joined copy at version %d after the add, want 3", got.Version)
	}
}

// failCreate is a registrytest.Mem whose CreateRegistry fails while fail is
// set: a joining store that is unreachable when its copy is written.
type failCreate struct {
	*registrytest.Mem
	fail bool
}

func (f *failCreate) CreateRegistry(ctx context.Context, r registry.Registry) error {
	if f.fail {
		return errors.New("unreachable")
	}
	return f.Mem.CreateRegistry(ctx, r)
}

// A join that stopped before the joining copy was written, or after the
// first copy only, is finished by Sync with every copy (the
// joining copy's name sorting first or last).
func TestJoinStoppedHalfWayIsSynced(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"a-copy", "z-copy"} {
		cs := registrytest.MemCopies(2)
		if _, err := registry.AddRegion(ctx, cs, "eu-west-1", 1, 8); err != nil {
			t.Fatal(err)
		}
		before, _ := cs[1].Store.Registry(ctx)
		store := &failCreate{Mem: &registrytest.Mem{}, fail: true}
		joining := registry.Copy{Name: name, Store: store}
		if _, err := registry.Join(ctx, cs, joining, nil); !errors.Is(err, registry.ErrDiverged) {
			t.Fatalf("%s: join with the joining copy unreachable: %v, want ErrDiverged", name, err)
		}
		// And copy-2 is put back to before the join: only copy-1 has it.
		cs[1].Store.(*registrytest.Mem).Reg = before
		store.fail = false
		all := append(slices.Clone(cs), joining)
		if _, err := registry.AddRegion(ctx, all, "us-east-1", 2, 8); !errors.Is(err, registry.ErrDiverged) {
			t.Fatalf("%s: add on the half joined copies: %v, want ErrDiverged", name, err)
		}
		r, err := registry.Sync(ctx, all)
		if err != nil {
			t.Fatalf("%s: sync: %v", name, err)
		}
		for i, c := range all {
			if got, _ := c.Store.Registry(ctx); !got.Equal(r) || got.Version != 2 {
				t.Fatalf("%s: copy %d after sync: %+v, want %+v at version 2", name, i+1, got, r)
			}
		}
	}
}
