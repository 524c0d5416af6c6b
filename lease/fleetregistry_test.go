package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// fleetStore is a lease store in memory keeping only what changing the
// fleet schedule uses: the fleet schedule record, the registry's copy and
// the records of each keyspace (recs, by index; List returns keyspace
// 0's, a Keyspace view the index's). setErr, if set, fails SetFleetSchedule.
type fleetStore struct {
	lease.Admin // nil: only the methods below are called
	reg         registrytest.Mem
	mu          sync.Mutex
	fleet       lease.FleetSchedule
	recs        map[int][]lease.Record
	setErr      error
}

func newFleetStore() *fleetStore {
	return &fleetStore{fleet: lease.FleetSchedule{Text: lease.DefaultFleetSchedule}}
}

func (s *fleetStore) Registry(ctx context.Context) (registry.Registry, error) {
	return s.reg.Registry(ctx)
}

func (s *fleetStore) SetRegistry(ctx context.Context, next registry.Registry) error {
	return s.reg.SetRegistry(ctx, next)
}

func (s *fleetStore) CreateRegistry(ctx context.Context, r registry.Registry) error {
	return s.reg.CreateRegistry(ctx, r)
}

func (s *fleetStore) RegistryIdentity(ctx context.Context) (string, error) {
	return s.reg.RegistryIdentity(ctx)
}

func (s *fleetStore) FleetSchedule(context.Context) (lease.FleetSchedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fleet, nil
}

func (s *fleetStore) SetFleetSchedule(_ context.Context, prev int64, text string) (lease.FleetSchedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.setErr != nil {
		return lease.FleetSchedule{}, s.setErr
	}
	if s.fleet.Version != prev {
		return lease.FleetSchedule{}, fmt.Errorf("%w: at version %d, not %d", lease.ErrConflict, s.fleet.Version, prev)
	}
	s.fleet = lease.FleetSchedule{Text: text, Version: prev + 1}
	return s.fleet, nil
}

func (s *fleetStore) Keyspace(index int) (lease.Store, error) { return keyspaceView{s, index}, nil }

func (s *fleetStore) AdminKeyspace(index int) (lease.Admin, error) {
	return keyspaceView{s, index}, nil
}

func (s *fleetStore) Close() error { return nil }

func (s *fleetStore) List(context.Context) ([]lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recs[0], nil
}

// keyspaceView is keyspace index of a fleetStore.
type keyspaceView struct {
	*fleetStore
	index int
}

func (v keyspaceView) List(context.Context) ([]lease.Record, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.recs[v.index], nil
}

// fleetCopies are n fleet stores named copy-1…copy-n.
func fleetCopies(n int) ([]lease.FleetCopy, []*fleetStore) {
	cs := make([]lease.FleetCopy, n)
	ss := make([]*fleetStore, n)
	for i := range cs {
		ss[i] = newFleetStore()
		cs[i] = lease.FleetCopy{Name: fmt.Sprintf("copy-%d", i+1), Store: ss[i]}
	}
	return cs, ss
}

func registryCopiesOf(cs []lease.FleetCopy) []registry.Copy {
	rs := make([]registry.Copy, len(cs))
	for i, c := range cs {
		rs[i] = registry.Copy{Name: c.Name, Store: c.Store}
	}
	return rs
}

const (
	schedFar   = "v1,v2@2099-01-01T00:00:00Z"
	schedLater = "v1,v2@2099-06-01T00:00:00Z"
)

// Every change of the registry keeps the fleet schedule it records; it
// goes through the stored form; a change that drops it is refused.
func TestRegistryKeepsSchedule(t *testing.T) {
	r, _, err := registry.Registry{}.WithRegion("eu-west-1", 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = r.WithSchedule("v1,v2@2099-01-01T00:00:00+00:00"); err != nil || r.Schedule != schedFar || r.Version != 2 {
		t.Fatalf("WithSchedule: %+v, %v; want %q recorded at version 2", r, err, schedFar)
	}
	steps := map[string]func(registry.Registry) (registry.Registry, error){
		"WithRegion": func(r registry.Registry) (registry.Registry, error) {
			n, _, err := r.WithRegion("us-east-1", 2, 8)
			return n, err
		},
		"WithRetired": func(r registry.Registry) (registry.Registry, error) {
			n, _, err := r.WithRetired("eu-west-1", 3)
			return n, err
		},
	}
	for name, step := range steps {
		n, err := step(r)
		if err != nil || n.Schedule != schedFar {
			t.Errorf("%s: schedule %q, %v; want %q kept", name, n.Schedule, err, schedFar)
		}
	}
	if _, err := r.WithSchedule("v3"); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("WithSchedule(v3): %v, want ErrInvalid", err)
	}
	body, err := registry.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := registry.Decode(body); err != nil || !got.Equal(r) {
		t.Fatalf("registry.Decode(registry.Encode(%+v)) = %+v, %v", r, got, err)
	}
	if o := r; func() bool { o.Schedule = schedLater; return o.Equal(r) }() {
		t.Errorf("registries that differ only in the schedule are Equal")
	}

	ctx := context.Background()
	cs := registrytest.MemCopies(2)
	if _, err := registry.AddRegion(ctx, cs, "a", 1, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := registry.Update(ctx, cs, func(r registry.Registry) (registry.Registry, error) { return r.WithSchedule(schedFar) }); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(registry.Registry) (registry.Registry, error){
		"AddRegion": func(r registry.Registry) (registry.Registry, error) {
			n, _, err := r.WithRegion("b", 2, 8)
			return n, err
		},
		"RetireRegion": func(r registry.Registry) (registry.Registry, error) {
			n, _, err := r.WithRetired("a", 3)
			return n, err
		},
	} {
		got, err := registry.Update(ctx, cs, change)
		if err != nil || got.Schedule != schedFar {
			t.Errorf("%s through registry.Update: %+v, %v; want the schedule kept", name, got, err)
		}
	}
	if _, err := registry.Update(ctx, cs, func(r registry.Registry) (registry.Registry, error) {
		return registry.Registry{Version: r.Version + 1, Regions: r.Regions}, nil
	}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("a change dropping the schedule: %v, want ErrInvalid", err)
	}
}

// A registry written before the schedule was kept decodes, with no
// schedule; a schedule that does not parse, or is not canonical, is
// refused by registry.Check (and so by registry.Encode and registry.Decode).
func TestRegistryScheduleBody(t *testing.T) {
	old := `{"version":2,"regions":[{"name":"eu-west-1","number":0,"created_ms":1767225600000}],"copies":["a","b"]}`
	r, err := registry.Decode([]byte(old))
	if err != nil || r.Schedule != "" || r.Version != 2 || len(r.Regions) != 1 {
		t.Fatalf("registry.Decode(a body without a schedule) = %+v, %v; want it with the schedule empty", r, err)
	}
	for name, sched := range map[string]string{
		"unknown layout": "v3",
		"no instant":     "v1,v2",
		"not canonical":  "v1,v2@2099-01-01T00:00:00+00:00",
		"spaces":         " v1",
	} {
		bad := registry.Registry{Version: 1, Schedule: sched}
		if err := registry.Check(bad); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("registry.Check(%s: %q) = %v, want ErrInvalid", name, sched, err)
		}
		body := fmt.Sprintf(`{"version":1,"regions":[],"schedule":%q}`, sched)
		if got, err := registry.Decode([]byte(body)); err == nil {
			t.Errorf("registry.Decode(%s: %s) = %+v; want an error", name, body, got)
		}
	}
	if err := registry.Check(registry.Registry{Version: 1, Schedule: schedFar}); err != nil {
		t.Errorf("registry.Check with %q: %v", schedFar, err)
	}
}

// A schedule change that stopped after the first copy is finished by
// registry.Sync; a copy that changed the schedule another way is not
// brought over.
func TestSyncScheduleChange(t *testing.T) {
	ctx := context.Background()
	cs := registrytest.MemCopies(2)
	if _, err := registry.AddRegion(ctx, cs, "a", 1, 8); err != nil {
		t.Fatal(err)
	}
	r, _ := cs[0].Store.Registry(ctx)
	next, _ := r.WithSchedule(schedFar)
	if err := cs[0].Store.SetRegistry(ctx, next); err != nil {
		t.Fatal(err)
	}
	if got, err := registry.Sync(ctx, cs); err != nil || got.Schedule != schedFar {
		t.Fatalf("sync over a schedule change: %+v, %v", got, err)
	}
	if got, _ := cs[1].Store.Registry(ctx); !got.Equal(next) {
		t.Fatalf("copy 2 after sync: %+v, want %+v", got, next)
	}
	// Copy 2 goes another way at the same version: not one change behind.
	theirs, _ := next.WithSchedule(schedLater)
	ours, _, _ := next.WithRegion("b", 2, 8)
	ours2, _, _ := ours.WithRegion("c", 3, 8)
	cs[1].Store.SetRegistry(ctx, theirs)
	cs[0].Store.SetRegistry(ctx, ours)
	cs[0].Store.SetRegistry(ctx, ours2)
	if _, err := registry.Sync(ctx, cs); !errors.Is(err, registry.ErrDiverged) {
		t.Fatalf("sync over a copy that went another way: %v, want registry.ErrDiverged", err)
	}
	// A region change that also changes a recorded schedule is not one
	// change either.
	cs2 := registrytest.MemCopies(2)
	registry.Update(ctx, cs2, func(r registry.Registry) (registry.Registry, error) { return r.WithSchedule(schedFar) })
	base, _ := cs2[0].Store.Registry(ctx)
	both, _, _ := base.WithRegion("c", 1, 8)
	both.Schedule = schedLater
	cs2[0].Store.SetRegistry(ctx, both)
	if _, err := registry.Sync(ctx, cs2); !errors.Is(err, registry.ErrDiverged) {
		t.Fatalf("sync over a region added with the schedule changed: %v, want registry.ErrDiverged", err)
	}
}

// ChangeFleetSchedule sets every store's record and then the registry; it
// refuses other copies, diverged copies and a change the notice rule
// refuses on any store before writing anything; a change that stopped half
// way is finished by running it again.
func TestChangeFleetSchedule(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cs, ss := fleetCopies(2)
	if _, err := registry.AddRegion(ctx, registryCopiesOf(cs), "a", 1, 8); err != nil {
		t.Fatal(err)
	}
	check := func(what, wantRecord, wantRegistry string) {
		t.Helper()
		for i, s := range ss {
			r, _ := s.Registry(ctx)
			if s.fleet.Text != wantRecord || r.Schedule != wantRegistry {
				t.Errorf("%s: copy %d keeps %q, its registry %q; want %q and %q", what, i+1, s.fleet.Text, r.Schedule, wantRecord, wantRegistry)
			}
		}
	}

	if _, err := lease.ChangeFleetSchedule(ctx, cs[:1], schedFar, now, 0); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "copy-1, copy-2") {
		t.Errorf("one copy of two: %v, want ErrInvalid naming the copies", err)
	}
	check("after naming one copy of two", "v1", "")

	// A mark within the notice of the cutover, in copy 2's keyspace of
	// region 2's v2 numbers, refuses the change before any write.
	for _, name := range []string{"b", "c"} {
		if _, err := registry.AddRegion(ctx, registryCopiesOf(cs), name, 1, 8); err != nil {
			t.Fatal(err)
		}
	}
	v2region2, _ := lease.KeyspaceOf(1, 2)
	ss[1].recs = map[int][]lease.Record{v2region2: {{Machine: 7, MarkMs: time.Date(2098, 12, 31, 23, 30, 0, 0, time.UTC).UnixMilli()}}}
	if _, err := lease.ChangeFleetSchedule(ctx, cs, schedFar, now, 0); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "nothing was changed") ||
		!strings.Contains(err.Error(), fmt.Sprintf("keyspace %d", v2region2)) {
		t.Errorf("a mark within the notice on copy 2: %v, want ErrInvalid naming keyspace %d, before any write", err, v2region2)
	}
	check("after the notice refusal on copy 2", "v1", "")
	ss[1].recs = nil

	ss[1].setErr = errors.New("store down")
	if _, err := lease.ChangeFleetSchedule(ctx, cs, schedFar, now, 0); err == nil || !strings.Contains(err.Error(), "run the same snowfence schedule set again") {
		t.Errorf("copy 2 failing: %v, want the message naming the rerun", err)
	}
	if ss[0].fleet.Text != schedFar || ss[1].fleet.Text != "v1" {
		t.Errorf("after copy 2 failed: records %q and %q, want copy 1 changed only", ss[0].fleet.Text, ss[1].fleet.Text)
	}
	// The registry is written first: it records the change, so region 2,
	// whose store missed it, starts no holder on either schedule.
	for i, s := range ss {
		if r, _ := s.Registry(ctx); r.Schedule != schedFar || r.Version != 4 {
			t.Errorf("copy %d's registry after a store failed: %+v, want it at version 4 recording the change", i+1, r)
		}
	}
	if err := lease.CheckHolderSchedule(mustReg(t, ss[1]), "v1", ss[1].fleet); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("a holder on v1 in the region whose store missed the change: %v, want ErrSchedule", err)
	}
	ss[1].setErr = nil

	ch, err := lease.ChangeFleetSchedule(ctx, []lease.FleetCopy{cs[1], cs[0]}, schedFar, now, 0)
	if err != nil || ch.Now[0].Version != 1 || ch.Now[1].Version != 1 {
		t.Fatalf("the change run again: %+v, %v", ch, err)
	}
	if r := mustReg(t, ss[0]); r.Schedule != schedFar || r.Version != 4 {
		t.Fatalf("the registry after the rerun: %+v, want version 4 recording the change", r)
	}
	check("after the change", schedFar, schedFar)

	// Again: nothing written.
	if _, err := lease.ChangeFleetSchedule(ctx, cs, schedFar, now, 0); err != nil || mustReg(t, ss[0]).Version != 4 {
		t.Fatalf("the same change once more: %v; want the registry left at version 4", err)
	}

	// Diverged registry copies: refused before any store is changed.
	r, _ := ss[0].Registry(ctx)
	next, _, _ := r.WithRegion("d", 2, 8)
	ss[0].SetRegistry(ctx, next)
	if _, err := lease.ChangeFleetSchedule(ctx, cs, schedLater, now, 0); !errors.Is(err, registry.ErrDiverged) {
		t.Errorf("diverged copies: %v, want registry.ErrDiverged", err)
	}
	check("after the refusal on diverged copies", schedFar, schedFar)
}

// Without a registry, nothing keeps several stores' records one, so a change
// naming several is refused before any write; one store alone is set.
func TestChangeFleetScheduleWithoutRegistry(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cs, ss := fleetCopies(2)
	if _, err := lease.ChangeFleetSchedule(ctx, cs, schedFar, now, 0); !errors.Is(err, lease.ErrInvalid) || ss[0].fleet.Text != "v1" || ss[1].fleet.Text != "v1" {
		t.Fatalf("ChangeFleetSchedule of two stores without a registry: %v; records %q, %q; want ErrInvalid and nothing changed", err, ss[0].fleet.Text, ss[1].fleet.Text)
	}
	ch, err := lease.ChangeFleetSchedule(ctx, cs[:1], schedFar, now, 0)
	if err != nil || ch.Registry.Version != 0 || ss[0].fleet.Text != schedFar {
		t.Fatalf("ChangeFleetSchedule of one store without a registry: %+v, %v; record %q", ch, err, ss[0].fleet.Text)
	}
	if r, _ := ss[0].Registry(ctx); r.Version != 0 {
		t.Errorf("a registry was written: %+v", r)
	}
}

// mustReg reads s's copy of the registry.
func mustReg(t *testing.T, s *fleetStore) registry.Registry {
	t.Helper()
	r, err := s.Registry(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A holder starts only when its schedule, its store's record and the
// registry agree; a registry with no schedule recorded refuses; with no
// registry, the store's claim checks.
func TestCheckHolderSchedule(t *testing.T) {
	reg := registry.Registry{Version: 3, Schedule: schedFar}
	far := lease.FleetSchedule{Text: schedFar, Version: 1}
	for _, c := range []struct {
		name   string
		reg    registry.Registry
		holder string
		fleet  lease.FleetSchedule
		want   string // "" for nil
	}{
		{"all agree", reg, schedFar, far, ""},
		{"spelled otherwise", reg, "v1,v2@2099-01-01T00:00:00+00:00", far, ""},
		{"holder differs", reg, "v1", far, "restart it with --schedule '" + schedFar + "'"},
		{"holder default", reg, "", far, "snowfence schedule set SCHEDULE"},
		{"store missed the change", reg, schedFar, lease.FleetSchedule{Text: "v1"}, "snowfence regions sync"},
		{"store missed it, holder on the store's", reg, "v1", lease.FleetSchedule{Text: "v1"}, "snowfence schedule set '" + schedFar + "'"},
		{"none recorded", registry.Registry{Version: 3}, "v1", far, "records no fleet schedule"},
		{"no registry", registry.Registry{}, "v1", far, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := lease.CheckHolderSchedule(c.reg, c.holder, c.fleet)
			if c.want == "" {
				if err != nil {
					t.Fatalf("CheckHolderSchedule: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckHolderSchedule: %v; want ErrSchedule saying %q", err, c.want)
			}
		})
	}
}

// schedule set refuses a copy that is not the store recorded under its
// name before it changes any store's record.
func TestChangeFleetScheduleRefusesAnotherStore(t *testing.T) {
	ctx := context.Background()
	fcs, _ := fleetCopies(2)
	if _, err := registry.AddRegion(ctx, registryCopiesOf(fcs), "eu-west-1", 1, 8); err != nil {
		t.Fatal(err)
	}
	other := newFleetStore()
	other.reg.Reg, _ = fcs[1].Store.Registry(ctx)
	moved := []lease.FleetCopy{fcs[0], {Name: "copy-2", Store: other}}
	_, err := lease.ChangeFleetSchedule(ctx, moved, schedFar, time.Now(), 0)
	registrytest.WantIdentityError(t, "schedule set with copy-2 another store", err, "copy-2", "")
	for i, c := range moved {
		if fs, _ := c.Store.FleetSchedule(ctx); fs.Version != 0 {
			t.Fatalf("copy %d's record after the refused change: %+v, want it untouched", i+1, fs)
		}
	}
}

// schedule set refuses two names for one store.
func TestChangeFleetScheduleRefusesOneStoreTwice(t *testing.T) {
	fcs, _ := fleetCopies(1)
	fcs = append(fcs, lease.FleetCopy{Name: "copy-9", Store: fcs[0].Store})
	_, err := lease.ChangeFleetSchedule(context.Background(), fcs, schedFar, time.Now(), 0)
	registrytest.WantIdentityError(t, "schedule set with one store twice", err, "copy-9", "copy-1")
}
