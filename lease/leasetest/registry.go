package leasetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// The region registry's checks: every store keeps a copy of the registry
// beside its leases (registry.Store), written with a compare on the
// version.

// registryLimit is the region numbers the checks add regions under, as a
// layout with 3 region bits has.
const registryLimit = 8

func mustRegistry(t *testing.T, rs registry.Store) registry.Registry {
	t.Helper()
	r, err := rs.Registry(ctxFor(t))
	if err != nil {
		t.Fatalf("Registry: %v", err)
	}
	return r
}

func mustWith(t *testing.T, r registry.Registry, name string, nowMs int64) registry.Registry {
	t.Helper()
	next, _, err := r.WithRegion(name, nowMs, registryLimit)
	if err != nil {
		t.Fatalf("WithRegion(%s): %v", name, err)
	}
	return next
}

// checkRegistry: a store where none was written reads the zero Registry;
// SetRegistry writes version 1, then 2 through another store value; a
// write at any version but the stored one's next is registry.ErrConflict
// and changes nothing; rewriting the stored registry exactly (a retry)
// succeeds; a registry no change can have written is ErrInvalid; and none
// of it disturbs the leases of the same keyspace.
func checkRegistry(t *testing.T, s *suite) {
	st := s.store(t)
	other := s.reopen(t, st)
	rs, ro := st, other
	if r := mustRegistry(t, rs); r.Version != 0 || len(r.Regions) != 0 {
		t.Fatalf("Registry of a new store = %+v; want the zero Registry", r)
	}

	nowMs := now()
	held := MustClaim(t, st, s.req("registry-holder", 0, 3, nowMs))
	if err := st.Quarantine(ctxFor(t), 9); err != nil {
		t.Fatalf("Quarantine(9): %v", err)
	}
	heldRec := s.stable(MustGet(t, st, held.Machine))
	before := s.list(t, st)

	v1 := mustWith(t, registry.Registry{}, "eu-west-1", 1000)
	if err := rs.SetRegistry(ctxFor(t), v1); err != nil {
		t.Fatalf("SetRegistry(version 1) on a new store: %v", err)
	}
	if r := mustRegistry(t, ro); !r.Equal(v1) {
		t.Fatalf("Registry after SetRegistry(version 1), through another store value = %+v; want %+v", r, v1)
	}
	rival := mustWith(t, registry.Registry{}, "us-east-1", 1001)
	skip := mustWith(t, mustWith(t, v1, "us-east-1", 1002), "ap-south-1", 1003)
	for name, stale := range map[string]registry.Registry{
		"another version 1": rival,
		"version 3 on 1":    skip,
	} {
		if err := ro.SetRegistry(ctxFor(t), stale); !errors.Is(err, registry.ErrConflict) {
			t.Errorf("SetRegistry(%s) = %v; want registry.ErrConflict", name, err)
		}
		if r := mustRegistry(t, rs); !r.Equal(v1) {
			t.Fatalf("Registry after the refused SetRegistry(%s) = %+v; want it unchanged, %+v", name, r, v1)
		}
	}

	v2 := mustWith(t, v1, "us-east-1", 2000)
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
		if err := rs.SetRegistry(ctxFor(t), bad); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("SetRegistry(%s) = %v; want ErrInvalid", name, err)
		}
	}
	if err := rs.SetRegistry(ctxFor(t), retired); err != nil {
		t.Fatalf("SetRegistry(version 3, a region retired): %v", err)
	}
	if r := mustRegistry(t, ro); !r.Equal(retired) {
		t.Fatalf("Registry at version 3 = %+v; want %+v", r, retired)
	}

	if after := s.list(t, other); !slices.Equal(after, before) {
		t.Errorf("List after the registry's writes = %+v; want it unchanged, %+v", after, before)
	}
	if got := s.stable(MustGet(t, other, held.Machine)); got != heldRec {
		t.Errorf("Get(%d) after the registry's writes = %+v; want it unchanged, %+v", held.Machine, got, heldRec)
	}
	s.mustExtend(t, st, held, s.top(nowMs)+1000)
	l := MustClaim(t, other, s.req("registry-holder-2", 0, 3, now()))
	if l.Machine == held.Machine {
		t.Errorf("claim beside a held number got the held number %d", l.Machine)
	}
}

// checkRegistryAdds: eight operators adding a region each at once, through
// eight store values on one keyspace, get the eight numbers 0..7 once
// each; a ninth finds none left.
func checkRegistryAdds(t *testing.T, s *suite) {
	st := s.store(t)
	const adders = registryLimit
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
			got[i], errs[i] = registry.AddRegion(ctx, []registry.Copy{{Name: "copy", Store: stores[i]}}, fmt.Sprintf("r-%d", i), int64(1000+i), registryLimit)
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
	if _, err := registry.AddRegion(ctx, []registry.Copy{{Name: "copy", Store: st}}, "r-9", 2000, registryLimit); !errors.Is(err, registry.ErrNoRegionNumber) {
		t.Fatalf("ninth region: %v; want ErrNoRegionNumber", err)
	}
	r := mustRegistry(t, st)
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
		g, err := registry.AddRegion(ctx, copies, name, 1000, registryLimit)
		if err != nil || g.Number != i {
			t.Fatalf("AddRegion(%s) = %+v, %v; want number %d", name, g, err, i)
		}
	}
	if _, err := registry.RetireRegion(ctx, copies, "eu-west-1", 2000); err != nil {
		t.Fatalf("RetireRegion: %v", err)
	}
	ra, rb := mustRegistry(t, a), mustRegistry(t, b)
	if ra.Version != 3 || !ra.Equal(rb) {
		t.Fatalf("copies after two adds and a retirement: %+v and %+v; want both at version 3", ra, rb)
	}
	if g, _ := ra.Named("eu-west-1"); !g.Retired() {
		t.Fatalf("eu-west-1 after RetireRegion = %+v; want it retired", g)
	}

	half := mustWith(t, ra, "ap-south-1", 3000)
	if err := a.SetRegistry(ctx, half); err != nil { // the change stops here
		t.Fatal(err)
	}
	if _, err := registry.AddRegion(ctx, copies, "sa-east-1", 3001, registryLimit); !errors.Is(err, registry.ErrDiverged) {
		t.Fatalf("AddRegion on copies one change apart = %v; want registry.ErrDiverged", err)
	}
	if _, err := registry.Sync(ctx, copies); err != nil {
		t.Fatalf("registry.Sync: %v", err)
	}
	if rb := mustRegistry(t, b); !rb.Equal(half) {
		t.Fatalf("second copy after registry.Sync = %+v; want %+v", rb, half)
	}
	g, err := registry.AddRegion(ctx, copies, "sa-east-1", 3002, registryLimit)
	if err != nil || g.Number != 3 {
		t.Fatalf("AddRegion after registry.Sync = %+v, %v; want number 3", g, err)
	}
}

// stable is rec without what changes by itself between two reads: the
// ExpiresMs a store that judges expiry itself reports (the time its
// server's lease has left, read now).
func (s *suite) stable(rec lease.Record) lease.Record {
	if !s.h.ClockExpiry {
		rec.ExpiresMs = 0
	}
	return rec
}

// list is st.List, each record stable.
func (s *suite) list(t *testing.T, st lease.Store) []lease.Record {
	t.Helper()
	recs, err := st.List(ctxFor(t))
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for i := range recs {
		recs[i] = s.stable(recs[i])
	}
	return recs
}

// checkRegistrySchedule: a claim refuses, with ErrSchedule naming the
// command that reconciles them, while the store's fleet schedule record
// differs from the schedule its copy of the registry records — a claim
// carrying the record's schedule, through the store, another store value
// and a keyspace sibling alike — since two regions on two schedules can put
// two layouts in force at one instant. A registry that records no schedule,
// or the record's, lets it claim; so does none at all. A lease claimed
// before the registry changed still extends: the claim is where the two are
// compared.
func checkRegistrySchedule(t *testing.T, s *suite) {
	const (
		recorded = "v1,v2@2036-01-01T00:00:00Z" // the registry's
		record   = "v1,v2@2037-01-01T00:00:00Z" // the store's
	)
	st := s.store(t)
	other := s.reopen(t, st)
	sib := mustKeyspace(t, st, regionOf(t, st)+1)
	ctx := ctxFor(t)
	if _, err := st.SetFleetSchedule(ctx, 0, record); err != nil {
		t.Fatalf("SetFleetSchedule(%q): %v", record, err)
	}
	req := func(holder string, lo int) lease.ClaimRequest {
		r := s.req(holder, lo, lo, now())
		r.Schedule = record
		return r
	}
	early := MustClaim(t, st, req("before-any-registry", 0))

	reg := mustWith(t, registry.Registry{}, "a", 1000)
	if err := st.SetRegistry(ctx, reg); err != nil {
		t.Fatalf("SetRegistry(no schedule recorded): %v", err)
	}
	MustClaim(t, st, req("registry-without-schedule", 1))

	differs, err := reg.WithSchedule(recorded)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetRegistry(ctx, differs); err != nil {
		t.Fatalf("SetRegistry(recording %q): %v", recorded, err)
	}
	for name, via := range map[string]lease.Store{"the store": st, "another store value": other, "a keyspace sibling": sib} {
		l, err := via.Claim(ctx, req("registry-differs", 2))
		if err == nil {
			t.Errorf("Claim through %s with the record %q and the registry recording %q = %v; want ErrSchedule", name, record, recorded, l)
			continue
		}
		if !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), "snowfence schedule set '"+recorded+"'") {
			t.Errorf("Claim through %s with the record %q and the registry recording %q: %v; want ErrSchedule naming snowfence schedule set '%s'",
				name, record, recorded, err, recorded)
		}
	}
	if rec := MustGet(t, st, 2); rec.Held() {
		t.Errorf("machine 2 after the refused claims: %+v; want it free", rec)
	}
	s.mustExtend(t, st, early, s.top(now())+1000)

	agrees, err := differs.WithSchedule(record)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.SetRegistry(ctx, agrees); err != nil {
		t.Fatalf("SetRegistry(recording %q): %v", record, err)
	}
	MustClaim(t, sib, req("registry-agrees", 2))
	MustClaim(t, st, req("registry-agrees", 2))
}
