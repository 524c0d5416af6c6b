package registrytest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/snowfence/snowfence/lease/registry"
)

// The checks of one copy's reads and compared writes, and of changes over
// two copies (Update's AddRegion, RetireRegion, Sync).

// Limit is the region numbers the checks add regions under, as a
// layout with 3 region bits has.
const Limit = 8

// MustRegistry reads rs's registry, failing the test on an error.
func MustRegistry(t testing.TB, rs registry.Reader) registry.Registry {
	t.Helper()
	r, err := rs.Registry(ctxFor(t))
	if err != nil {
		t.Fatalf("Registry: %v", err)
	}
	return r
}

// MustWith is r.WithRegion(name, nowMs, Limit), failing the test on an
// error.
func MustWith(t testing.TB, r registry.Registry, name string, nowMs int64) registry.Registry {
	t.Helper()
	next, _, err := r.WithRegion(name, nowMs, Limit)
	if err != nil {
		t.Fatalf("WithRegion(%s): %v", name, err)
	}
	return next
}

// checkRegistry: a store where none was written reads the zero Registry;
// SetRegistry writes version 1, then 2 through another store value; a
// write at any version but the stored one's next is ErrConflict and
// changes nothing; rewriting the stored registry exactly (a retry)
// succeeds; and a registry no change can have written is ErrInvalid.
func checkRegistry(t *testing.T, s *suite) {
	rs := s.store(t)
	ro := s.reopen(t, rs)
	if r := MustRegistry(t, rs); r.Version != 0 || len(r.Regions) != 0 {
		t.Fatalf("Registry of a new store = %+v; want the zero Registry", r)
	}

	v1 := MustWith(t, registry.Registry{}, "eu-west-1", 1000)
	if err := rs.SetRegistry(ctxFor(t), v1); err != nil {
		t.Fatalf("SetRegistry(version 1) on a new store: %v", err)
	}
	if r := MustRegistry(t, ro); !r.Equal(v1) {
		t.Fatalf("Registry after SetRegistry(version 1), through another store value = %+v; want %+v", r, v1)
	}
	rival := MustWith(t, registry.Registry{}, "us-east-1", 1001)
	skip := MustWith(t, MustWith(t, v1, "us-east-1", 1002), "ap-south-1", 1003)
	for name, stale := range map[string]registry.Registry{
		"another version 1": rival,
		"version 3 on 1":    skip,
	} {
		if err := ro.SetRegistry(ctxFor(t), stale); !errors.Is(err, registry.ErrConflict) {
			t.Errorf("SetRegistry(%s) = %v; want registry.ErrConflict", name, err)
		}
		if r := MustRegistry(t, rs); !r.Equal(v1) {
			t.Fatalf("Registry after the refused SetRegistry(%s) = %+v; want it unchanged, %+v", name, r, v1)
		}
	}

	v2 := MustWith(t, v1, "us-east-1", 2000)
	if err := ro.SetRegistry(ctxFor(t), v2); err != nil {
		t.Fatalf("SetRegistry(version 2) through another store value: %v", err)
	}
	for name, via := range map[string]registry.Store{"same store": ro, "another store": rs} {
		if err := via.SetRegistry(ctxFor(t), v2); err != nil {
			t.Errorf("SetRegistry of the stored registry again (%s, a retry) = %v; want nil", name, err)
		}
	}
	if err := rs.SetRegistry(ctxFor(t), v1); !errors.Is(err, registry.ErrConflict) {
		t.Errorf("SetRegistry(version 1) over version 2 = %v; want registry.ErrConflict", err)
	}
	retired, _, err := v2.WithRetired("eu-west-1", 2001)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]registry.Registry{
		"version 0":       {},
		"bad name":        {Version: 3, Regions: []registry.Region{{Name: "EU", Number: 0}}},
		"number twice":    {Version: 3, Regions: []registry.Region{{Name: "a", Number: 1}, {Name: "b", Number: 1}}},
		"name twice":      {Version: 3, Regions: []registry.Region{{Name: "a", Number: 0}, {Name: "a", Number: 1}}},
		"negative":        {Version: 3, Regions: []registry.Region{{Name: "a", Number: -1}}},
		"out of order":    {Version: 3, Regions: []registry.Region{{Name: "a", Number: 2}, {Name: "b", Number: 1}}},
		"negative retire": {Version: 3, Regions: []registry.Region{{Name: "a", Number: 0, RetiredMs: -5}}},
	} {
		if err := rs.SetRegistry(ctxFor(t), bad); !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("SetRegistry(%s) = %v; want ErrInvalid", name, err)
		}
	}
	if err := rs.SetRegistry(ctxFor(t), retired); err != nil {
		t.Fatalf("SetRegistry(version 3, a region retired): %v", err)
	}
	if r := MustRegistry(t, ro); !r.Equal(retired) {
		t.Fatalf("Registry at version 3 = %+v; want %+v", r, retired)
	}
}

// checkRegistryAdds: eight operators adding a region each at once, through
// eight store values on one keyspace, get the eight numbers 0..7 once
// each; a ninth finds none left.
func checkRegistryAdds(t *testing.T, s *suite) {
	st := s.store(t)
	const adders = Limit
	stores := make([]registry.Store, adders)
	for i := range stores {
		stores[i] = s.reopen(t, st)
	}
	ctx := ctxFor(t)
	got := make([]registry.Region, adders)
	errs := make([]error, adders)
	var wg sync.WaitGroup
	for i := range adders {
		wg.Go(func() {
			got[i], errs[i] = registry.AddRegion(ctx, []registry.Copy{{Name: "copy", Store: stores[i]}}, fmt.Sprintf("r-%d", i), int64(1000+i), Limit)
		})
	}
	wg.Wait()
	var nums []int
	for i, err := range errs {
		if err != nil {
			t.Fatalf("adder %d: %v", i, err)
		}
		nums = append(nums, got[i].Number)
	}
	slices.Sort(nums)
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(nums, want) {
		t.Fatalf("numbers %v; want %v, once each", nums, want)
	}
	if _, err := registry.AddRegion(ctx, []registry.Copy{{Name: "copy", Store: st}}, "r-9", 2000, Limit); !errors.Is(err, registry.ErrNoRegionNumber) {
		t.Fatalf("ninth region: %v; want ErrNoRegionNumber", err)
	}
	r := MustRegistry(t, st)
	if r.Version != adders || len(r.Regions) != adders {
		t.Fatalf("Registry after %d adds = %+v; want version %d with %d regions", adders, r, adders, adders)
	}
	for i, g := range got {
		if stored, ok := r.Named(g.Name); !ok || stored != g {
			t.Errorf("adder %d added %+v; the registry has %+v", i, g, stored)
		}
	}
}

// checkRegistryCopies: two stores' keyspaces as the two copies of one
// fleet's registry: AddRegion and RetireRegion write both; a change that
// stopped after the first copy is registry.ErrDiverged until registry.Sync
// finishes it.
func checkRegistryCopies(t *testing.T, s *suite) {
	a, b := s.store(t), s.store(t)
	copies := []registry.Copy{{Name: "copy-a", Store: a}, {Name: "copy-b", Store: b}}
	ctx := ctxFor(t)
	for i, name := range []string{"eu-west-1", "us-east-1"} {
		g, err := registry.AddRegion(ctx, copies, name, 1000, Limit)
		if err != nil || g.Number != i {
			t.Fatalf("AddRegion(%s) = %+v, %v; want number %d", name, g, err, i)
		}
	}
	if _, err := registry.RetireRegion(ctx, copies, "eu-west-1", 2000); err != nil {
		t.Fatalf("RetireRegion: %v", err)
	}
	ra, rb := MustRegistry(t, a), MustRegistry(t, b)
	if ra.Version != 3 || !ra.Equal(rb) {
		t.Fatalf("copies after two adds and a retirement: %+v and %+v; want both at version 3", ra, rb)
	}
	if g, _ := ra.Named("eu-west-1"); !g.Retired() {
		t.Fatalf("eu-west-1 after RetireRegion = %+v; want it retired", g)
	}

	half := MustWith(t, ra, "ap-south-1", 3000)
	if err := a.SetRegistry(ctx, half); err != nil { // the change stops here
		t.Fatal(err)
	}
	if _, err := registry.AddRegion(ctx, copies, "sa-east-1", 3001, Limit); !errors.Is(err, registry.ErrDiverged) {
		t.Fatalf("AddRegion on copies one change apart = %v; want registry.ErrDiverged", err)
	}
	if _, err := registry.Sync(ctx, copies); err != nil {
		t.Fatalf("registry.Sync: %v", err)
	}
	if rb := MustRegistry(t, b); !rb.Equal(half) {
		t.Fatalf("second copy after registry.Sync = %+v; want %+v", rb, half)
	}
	g, err := registry.AddRegion(ctx, copies, "sa-east-1", 3002, Limit)
	if err != nil || g.Number != 3 {
		t.Fatalf("AddRegion after registry.Sync = %+v, %v; want number 3", g, err)
	}
}
