package leasetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// The checks of the region registry's copy beside the leases: writing it
// disturbs no lease, and every claim compares the store's fleet schedule
// record with the schedule it records. The checks of the copy itself are
// registrytest's (RegistryHarness).

// checkRegistryBesideLeases: a registry written to a store through every
// kind of change registrytest makes (versions 1 to 3, a retry, a refused
// write) disturbs none of the leases of the same keyspace: the records
// read the same, the held lease renews, and a claim beside it gets
// another number.
func checkRegistryBesideLeases(t *testing.T, s *suite) {
	st := s.adminStore(t)
	other := s.adminReopen(t, st)
	rs, ro := st, other
	if r := registrytest.MustRegistry(t, rs); r.Version != 0 || len(r.Regions) != 0 {
		t.Fatalf("Registry of a new store = %+v; want the zero Registry", r)
	}

	nowMs := now()
	held := MustClaim(t, st, s.req("registry-holder", 0, 3, nowMs))
	if err := st.Quarantine(ctxFor(t), 9); err != nil {
		t.Fatalf("Quarantine(9): %v", err)
	}
	heldRec := s.stable(MustGet(t, st, held.Machine))
	before := s.list(t, st)

	v1 := registrytest.MustWith(t, registry.Registry{}, "eu-west-1", 1000)
	if err := rs.SetRegistry(ctxFor(t), v1); err != nil {
		t.Fatalf("SetRegistry(version 1): %v", err)
	}
	v2 := registrytest.MustWith(t, v1, "us-east-1", 2000)
	if err := ro.SetRegistry(ctxFor(t), v2); err != nil {
		t.Fatalf("SetRegistry(version 2) through another store value: %v", err)
	}
	if err := ro.SetRegistry(ctxFor(t), v2); err != nil {
		t.Errorf("SetRegistry of the stored registry again (a retry) = %v; want nil", err)
	}
	if err := rs.SetRegistry(ctxFor(t), v1); !errors.Is(err, registry.ErrConflict) {
		t.Errorf("SetRegistry(version 1) over version 2 = %v; want ErrConflict", err)
	}
	retired, _, err := v2.WithRetired("eu-west-1", 2001)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.SetRegistry(ctxFor(t), retired); err != nil {
		t.Fatalf("SetRegistry(version 3, a region retired): %v", err)
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
func (s *suite) list(t *testing.T, st lease.Admin) []lease.Record {
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
	st := s.adminStore(t)
	other := s.adminReopen(t, st)
	sib := mustAdminKeyspace(t, st, regionOf(t, st)+1)
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

	reg := registrytest.MustWith(t, registry.Registry{}, "a", 1000)
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
	for name, via := range map[string]lease.Admin{"the store": st, "another store value": other, "a keyspace sibling": sib} {
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
