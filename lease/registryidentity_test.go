package lease_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// wantIdentityError fails t unless err is a *CopyIdentityError for name
// (with other as the second copy of one store, "" for a copy that is
// another store than the recorded one).
func wantIdentityError(t *testing.T, what string, err error, name, other string) {
	t.Helper()
	var ie *lease.CopyIdentityError
	if !errors.Is(err, lease.ErrCopyIdentity) || !errors.As(err, &ie) || ie.Name != name || ie.Other != other || (other == "") != (ie.Recorded != "") {
		t.Fatalf("%s: %v (%+v); want a CopyIdentityError for %s (other %q)", what, err, ie, name, other)
	}
}

// versions returns the version of every copy.
func versions(t *testing.T, cs []lease.RegistryCopy) []int64 {
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
	cs := copies(2)
	if _, err := lease.AddRegion(ctx, cs, "eu-west-1", 1, 8); err != nil {
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
	moved := []lease.RegistryCopy{cs[0], {Name: "copy-2", Store: &memRegistry{reg: r}}}
	_, err := lease.AddRegion(ctx, moved, "us-east-1", 2, 8)
	wantIdentityError(t, "add with copy-2 another store", err, "copy-2", "")
	_, err = lease.SyncRegistry(ctx, moved)
	wantIdentityError(t, "sync with copy-2 another store", err, "copy-2", "")
	if vs := versions(t, moved); !slices.Equal(vs, []int64{1, 1}) {
		t.Fatalf("versions after the refused changes %v, want [1 1]", vs)
	}
	if _, err := lease.AddRegion(ctx, cs, "us-east-1", 2, 8); err != nil {
		t.Fatalf("add with the recorded stores: %v", err)
	}
}

// Two names for one store are refused, before and after the first change.
func TestRegistryRefusesOneStoreTwice(t *testing.T) {
	ctx := context.Background()
	cs := copies(2)
	twice := []lease.RegistryCopy{cs[0], {Name: "copy-9", Store: cs[0].Store}}
	_, err := lease.AddRegion(ctx, twice, "eu-west-1", 1, 8)
	wantIdentityError(t, "create with one store twice", err, "copy-9", "copy-1")
	if vs := versions(t, cs); !slices.Equal(vs, []int64{0, 0}) {
		t.Fatalf("versions after the refused create %v, want [0 0]", vs)
	}
	fcs, _ := fleetCopies(1)
	fcs = append(fcs, lease.FleetCopy{Name: "copy-9", Store: fcs[0].Store})
	_, err = lease.ChangeFleetSchedule(ctx, fcs, schedFar, time.Now(), 0)
	wantIdentityError(t, "schedule set with one store twice", err, "copy-9", "copy-1")
}

// A registry written before identities were kept records them at its next
// change.
func TestRegistryRecordsIdentitiesOfAnOldRegistry(t *testing.T) {
	ctx := context.Background()
	cs := copies(2)
	old := lease.Registry{Version: 1, Regions: []lease.Region{{Name: "eu-west-1", Number: 0, CreatedMs: 1}}, Copies: []string{"copy-1", "copy-2"}}
	for _, c := range cs {
		c.Store.(*memRegistry).reg = old
	}
	if _, err := lease.AddRegion(ctx, cs, "us-east-1", 2, 8); err != nil {
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
	cs := copies(2)
	joining := lease.RegistryCopy{Name: "copy-3", Store: &memRegistry{}}
	if _, err := lease.JoinRegistry(ctx, cs, joining); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("join with no registry written: %v, want ErrInvalid", err)
	}
	if _, err := lease.AddRegion(ctx, cs, "eu-west-1", 1, 8); err != nil {
		t.Fatal(err)
	}
	_, err := lease.JoinRegistry(ctx, cs, lease.RegistryCopy{Name: "copy-3", Store: cs[1].Store})
	wantIdentityError(t, "join an existing copy's store", err, "copy-3", "copy-2")
	full := lease.RegistryCopy{Name: "copy-3", Store: &memRegistry{reg: lease.Registry{Version: 1, Regions: []lease.Region{{Name: "mars-1", CreatedMs: 1}}}}}
	if _, err := lease.JoinRegistry(ctx, cs, full); !errors.Is(err, lease.ErrRegistryDiverged) {
		t.Fatalf("join a store holding a registry: %v, want ErrRegistryDiverged", err)
	}
	if _, err := lease.JoinRegistry(ctx, cs[:1], joining); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("join naming one copy of two: %v, want ErrInvalid", err)
	}
	if vs := versions(t, append(slices.Clone(cs), joining)); !slices.Equal(vs, []int64{1, 1, 0}) {
		t.Fatalf("versions after the refused joins %v, want [1 1 0]", vs)
	}
	r, err := lease.JoinRegistry(ctx, cs, joining)
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
	if _, err := lease.JoinRegistry(ctx, cs, joining); err != nil {
		t.Fatalf("the same join again: %v, want nil (done already)", err)
	}
	if _, err := lease.AddRegion(ctx, cs, "us-east-1", 2, 8); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("add without the joined copy: %v, want ErrInvalid", err)
	}
	g, err := lease.AddRegion(ctx, all, "us-east-1", 2, 8)
	if err != nil || g.Number != 1 {
		t.Fatalf("add with every copy: %+v, %v; want number 1", g, err)
	}
	if got, _ := joining.Store.Registry(ctx); got.Version != 3 {
		t.Fatalf("the joined copy at version %d after the add, want 3", got.Version)
	}
}

// failCreate is a memRegistry whose CreateRegistry fails while fail is
// set: a joining store that is unreachable when its copy is written.
type failCreate struct {
	*memRegistry
	fail bool
}

func (f *failCreate) CreateRegistry(ctx context.Context, r lease.Registry) error {
	if f.fail {
		return errors.New("unreachable")
	}
	return f.memRegistry.CreateRegistry(ctx, r)
}

// A join that stopped before the joining copy was written, or after the
// first copy only, is finished by SyncRegistry with every copy (the
// joining copy's name sorting first or last).
func TestJoinStoppedHalfWayIsSynced(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"a-copy", "z-copy"} {
		cs := copies(2)
		if _, err := lease.AddRegion(ctx, cs, "eu-west-1", 1, 8); err != nil {
			t.Fatal(err)
		}
		before, _ := cs[1].Store.Registry(ctx)
		store := &failCreate{memRegistry: &memRegistry{}, fail: true}
		joining := lease.RegistryCopy{Name: name, Store: store}
		if _, err := lease.JoinRegistry(ctx, cs, joining); !errors.Is(err, lease.ErrRegistryDiverged) {
			t.Fatalf("%s: join with the joining copy unreachable: %v, want ErrRegistryDiverged", name, err)
		}
		// And copy-2 is put back to before the join: only copy-1 has it.
		cs[1].Store.(*memRegistry).reg = before
		store.fail = false
		all := append(slices.Clone(cs), joining)
		if _, err := lease.AddRegion(ctx, all, "us-east-1", 2, 8); !errors.Is(err, lease.ErrRegistryDiverged) {
			t.Fatalf("%s: add on the half joined copies: %v, want ErrRegistryDiverged", name, err)
		}
		r, err := lease.SyncRegistry(ctx, all)
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

// schedule set refuses a copy that is not the store recorded under its
// name before it changes any store's record.
func TestChangeFleetScheduleRefusesAnotherStore(t *testing.T) {
	ctx := context.Background()
	fcs, _ := fleetCopies(2)
	if _, err := lease.AddRegion(ctx, registryCopiesOf(fcs), "eu-west-1", 1, 8); err != nil {
		t.Fatal(err)
	}
	other := newFleetStore()
	other.reg.reg, _ = fcs[1].Store.Registry(ctx)
	moved := []lease.FleetCopy{fcs[0], {Name: "copy-2", Store: other}}
	_, err := lease.ChangeFleetSchedule(ctx, moved, schedFar, time.Now(), 0)
	wantIdentityError(t, "schedule set with copy-2 another store", err, "copy-2", "")
	for i, c := range moved {
		if fs, _ := c.Store.FleetSchedule(ctx); fs.Version != 0 {
			t.Fatalf("copy %d's record after the refused change: %+v, want it untouched", i+1, fs)
		}
	}
}
