package leasetest

import (
	"testing"

	"github.com/snowfence/snowfence/lease"
)

// checkCountHolders: lease.CountHolders (the store's HolderCounter where it
// has one) counts the live holders of the store's own keyspace and region
// only, and agrees with lease.LiveHolders of List: a released number and a
// lapsed lease stop counting, a holder of another keyspace never counts,
// and a quarantined number does not count.
func checkCountHolders(t *testing.T, s *suite) {
	st := s.adminStore(t)
	sib := mustAdminKeyspace(t, st, mustKeyspaceIndex(t, st))
	count := func(what string, nowMs int64, want int) {
		t.Helper()
		got, err := lease.CountHolders(ctxFor(t), st, nowMs)
		if err != nil {
			t.Fatalf("%s: CountHolders: %v", what, err)
		}
		if listed := lease.LiveHolders(s.list(t, st), nowMs); got != listed || got != want {
			t.Errorf("%s: CountHolders = %d, LiveHolders(List) = %d; want %d", what, got, listed, want)
		}
	}
	nowMs := now()
	count("an empty store", nowMs, 0)
	MustClaim(t, sib, s.req("other-keyspace", 3, 3, nowMs))
	count("a holder of another keyspace only", nowMs, 0)
	a := MustClaim(t, st, s.req("a", 3, 3, nowMs))
	b := MustClaim(t, st, s.req("b", 4, 4, nowMs))
	MustClaim(t, st, s.req("c", 5, 5, nowMs))
	count("three holders", nowMs, 3)
	if err := st.Quarantine(ctxFor(t), 5); err != nil {
		t.Fatal(err)
	}
	count("three holders, one of them quarantined", nowMs, 2)
	if err := st.Release(ctxFor(t), b, b.MarkMs); err != nil {
		t.Fatalf("Release(b): %v", err)
	}
	count("one holder after a release", nowMs, 1)
	count("after a's lease lapsed", s.expire(t, st, a, nowMs), 0)
}

// mustKeyspaceIndex is a keyspace index other than st's own region's.
func mustKeyspaceIndex(t *testing.T, st lease.Store) int {
	t.Helper()
	idx, err := lease.KeyspaceOf(1, regionOf(t, st))
	if err != nil {
		t.Fatalf("KeyspaceOf(1, %d): %v", regionOf(t, st), err)
	}
	return idx
}
