package leasetest

import (
	"errors"
	"maps"
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// regioned is what the suite reads a store's keyspace with: every store
// has it, and Store.Keyspace promises it of the siblings it opens.
type regioned interface{ Region() int }

// regionOf returns st's Region(), failing the test if st has none.
func regionOf(t *testing.T, st lease.Store) int {
	t.Helper()
	r, ok := st.(regioned)
	if !ok {
		t.Fatalf("%T has no Region() int method; the Keyspaces check needs it", st)
	}
	return r.Region()
}

// mustKeyspace opens st.Keyspace(index), failing the test on an error or
// a sibling whose Region() is not index; the harness's cleanup closes it.
func mustKeyspace(t *testing.T, st lease.Store, index int) lease.Store {
	t.Helper()
	sib, err := st.Keyspace(index)
	if err != nil {
		t.Fatalf("Keyspace(%d): %v", index, err)
	}
	t.Cleanup(func() { sib.Close() })
	if got := regionOf(t, sib); got != index {
		t.Fatalf("Keyspace(%d).Region() = %d, want %d", index, got, index)
	}
	return sib
}

// holders returns the machine number and holder of every record, for
// comparing Lists.
func holders(recs []lease.Record) map[int]string {
	m := make(map[int]string, len(recs))
	for _, r := range recs {
		h := r.Holder
		if r.Quarantined {
			h = "(quarantined)"
		}
		m[r.Machine] = h
	}
	return m
}

// checkKeyspaces: a store's sibling on the keyspace of layout step 1
// (lease.KeyspaceOf(1, region)) leases numbers of its own — the number a
// holder holds through the store is claimed at the same time by another
// through the sibling, and each one's Get, List and leases see only its
// own records — while the fleet schedule and the region registry are one
// record, written through either and read through the other. Keyspace of
// the store's own region reaches the store's records; closing a sibling
// leaves the store working; a negative index is ErrInvalid.
func checkKeyspaces(t *testing.T, s *suite) {
	st := s.adminStore(t)
	r := regionOf(t, st)
	idx, err := lease.KeyspaceOf(1, r)
	if err != nil {
		t.Fatalf("KeyspaceOf(1, %d): %v", r, err)
	}
	sib := mustAdminKeyspace(t, st, idx)
	fence := mustKeyspace(t, st, idx) // the fence contract's Keyspace: the same keyspace as AdminKeyspace's

	// One number, two holders at once.
	nowMs := now()
	lp := MustClaim(t, st, s.req("ks-parent", 5, 5, nowMs))
	ls := MustClaim(t, sib, s.req("ks-sibling", 5, 5, nowMs))
	if lp.Region != r || ls.Region != idx {
		t.Errorf("leases of machine 5 name regions %d and %d; want the keyspaces %d and %d", lp.Region, ls.Region, r, idx)
	}
	lp = s.mustExtend(t, st, lp, s.top(nowMs)+1000)
	ls = s.mustExtend(t, sib, ls, s.top(nowMs)+2000)
	if _, err := st.Claim(ctxFor(t), s.req("ks-rival", 5, 5, nowMs)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Errorf("claim of machine 5, held in the store's own keyspace: %v, want ErrNoFreeNumber", err)
	}
	if rec := MustGet(t, fence, 5); rec.Holder != "ks-sibling" || rec.Region != idx {
		t.Errorf("Get(5) through Keyspace(%d) = %+v; want the sibling's holder ks-sibling, region %d (AdminKeyspace and Keyspace reach one keyspace)", idx, rec, idx)
	}
	// A lease of one keyspace is no lease of the other.
	if _, err := sib.Extend(ctxFor(t), lp, s.top(nowMs)+3000, s.h.LeaseFor); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Extend through the sibling of a lease of the store's keyspace: %v, want ErrInvalid", err)
	}

	// Each sees only its own records.
	only := MustClaim(t, st, s.req("ks-parent-only", 7, 7, nowMs))
	if err := sib.Quarantine(ctxFor(t), 9); err != nil {
		t.Fatalf("Quarantine(9) through the sibling: %v", err)
	}
	for _, c := range []struct {
		name   string
		st     lease.Admin
		region int
		want   map[int]string
	}{
		{"store", st, r, map[int]string{5: "ks-parent", 7: "ks-parent-only"}},
		{"sibling", sib, idx, map[int]string{5: "ks-sibling", 9: "(quarantined)"}},
	} {
		recs := s.list(t, c.st)
		if got := holders(recs); !maps.Equal(got, c.want) {
			t.Errorf("List through the %s = %v, want %v", c.name, got, c.want)
		}
		for _, rec := range recs {
			if rec.Region != c.region {
				t.Errorf("List through the %s: record %+v, want region %d", c.name, rec, c.region)
			}
		}
		for n, h := range c.want {
			rec := MustGet(t, c.st, n)
			if got := holders([]lease.Record{rec})[n]; got != h || rec.Region != c.region {
				t.Errorf("Get(%d) through the %s = %+v, want %s in region %d", n, c.name, rec, h, c.region)
			}
		}
	}
	if rec := MustGet(t, sib, 7); rec.Held() || rec.Quarantined {
		t.Errorf("Get(7) through the sibling = %+v; want the number free there", rec)
	}
	if rec := MustGet(t, st, 9); rec.Held() || rec.Quarantined {
		t.Errorf("Get(9) through the store = %+v; want the number free there", rec)
	}

	// Keyspace of the store's own region, and back from the sibling, reach
	// the store's records.
	for name, from := range map[string]lease.Admin{"store": st, "sibling": sib} {
		same := mustAdminKeyspace(t, from, r)
		if rec := MustGet(t, same, 5); rec.Holder != "ks-parent" || rec.Token != lp.Token {
			t.Errorf("Get(5) through the %s's Keyspace(%d) = %+v, want ks-parent token %d", name, r, rec, lp.Token)
		}
		if err := same.Close(); err != nil {
			t.Errorf("Close of the %s's Keyspace(%d): %v", name, r, err)
		}
	}

	// One region registry.
	v1 := registrytest.MustWith(t, registry.Registry{}, "eu-west-1", 1000)
	if err := sib.SetRegistry(ctxFor(t), v1); err != nil {
		t.Fatalf("SetRegistry(version 1) through the sibling: %v", err)
	}
	if got := registrytest.MustRegistry(t, st); !got.Equal(v1) {
		t.Fatalf("Registry through the store after the sibling wrote version 1 = %+v, want %+v", got, v1)
	}
	v2 := registrytest.MustWith(t, v1, "us-east-1", 1001)
	if err := st.SetRegistry(ctxFor(t), v2); err != nil {
		t.Fatalf("SetRegistry(version 2) through the store: %v", err)
	}
	if got := registrytest.MustRegistry(t, sib); !got.Equal(v2) {
		t.Fatalf("Registry through the sibling after the store wrote version 2 = %+v, want %+v", got, v2)
	}
	if err := sib.SetRegistry(ctxFor(t), registrytest.MustWith(t, v1, "ap-south-1", 1002)); !errors.Is(err, registry.ErrConflict) {
		t.Errorf("SetRegistry of another version 2 through the sibling: %v, want registry.ErrConflict", err)
	}

	// One fleet schedule.
	const next = "v1,v2@2036-01-01T00:00:00Z"
	set, err := sib.SetFleetSchedule(ctxFor(t), 0, next)
	if err != nil {
		t.Fatalf("SetFleetSchedule(0, %q) through the sibling: %v", next, err)
	}
	if fs, err := st.FleetSchedule(ctxFor(t)); err != nil || fs != set {
		t.Fatalf("FleetSchedule through the store = %+v, %v; want %+v, as the sibling set it", fs, err, set)
	}
	if _, err := st.SetFleetSchedule(ctxFor(t), 0, "v1"); !errors.Is(err, lease.ErrConflict) {
		t.Errorf("SetFleetSchedule(0) through the store after the sibling set version 1: %v, want ErrConflict", err)
	}
	if _, err := sib.Claim(ctxFor(t), s.req("ks-default", 11, 11, nowMs)); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("claim through the sibling with the default schedule after the fleet's moved on: %v, want ErrSchedule", err)
	}
	req := s.req("ks-next", 11, 11, nowMs)
	req.Schedule = next
	if _, err := st.Claim(ctxFor(t), s.req("ks-default", 11, 11, nowMs)); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("claim through the store with the default schedule after the sibling set %q: %v, want ErrSchedule", next, err)
	}

	// Closing the sibling leaves the store working, and its leases held.
	if err := sib.Close(); err != nil {
		t.Fatalf("Close of the sibling: %v", err)
	}
	if _, err := sib.Get(ctxFor(t), 5); err == nil {
		t.Errorf("Get through the closed sibling succeeded; want an error")
	}
	lp = s.mustExtend(t, st, lp, s.top(nowMs)+4000)
	nl := MustClaim(t, st, req)
	s.mustExtend(t, st, nl, s.top(nowMs)+1000)
	MustRelease(t, st, only, only.MarkMs)
	if got, want := holders(s.list(t, st)), map[int]string{5: "ks-parent", 7: "", 11: "ks-next"}; !maps.Equal(got, want) {
		t.Errorf("List through the store after the sibling closed = %v, want %v", got, want)
	}
	again := mustAdminKeyspace(t, st, idx)
	if rec := MustGet(t, again, 5); rec.Holder != "ks-sibling" || rec.Token != ls.Token {
		t.Errorf("Get(5) through a new Keyspace(%d) = %+v; want ks-sibling token %d, left held by the closed sibling", idx, rec, ls.Token)
	}

	// What no store can address.
	for _, bad := range []int{-1, -idx} {
		if got, err := st.Keyspace(bad); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("Keyspace(%d) = %v, %v; want ErrInvalid", bad, got, err)
		}
		if got, err := again.Keyspace(bad); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("Keyspace(%d) of a sibling = %v, %v; want ErrInvalid", bad, got, err)
		}
	}
}

// mustAdminKeyspace is mustKeyspace through st.AdminKeyspace.
func mustAdminKeyspace(t *testing.T, st lease.Admin, index int) lease.Admin {
	t.Helper()
	sib, err := st.AdminKeyspace(index)
	if err != nil {
		t.Fatalf("AdminKeyspace(%d): %v", index, err)
	}
	t.Cleanup(func() { sib.Close() })
	if got := regionOf(t, sib); got != index {
		t.Fatalf("AdminKeyspace(%d).Region() = %d, want %d", index, got, index)
	}
	return sib
}
