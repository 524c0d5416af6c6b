package dynamostore_test

import (
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestJournalQuarantinedReleaseRestored: a quarantined holder's release
// rewrites the EndMs of an entry the quarantine ended (from the
// reservation to where the holder stopped), so jcur and its archived copy
// differ if the lease table alone is restored to a backup made between the
// quarantine and the release (TestJournalRestoreLeaseTableOnly's setting):
// jcur is then the stale copy, ending at A's reservation, and the journal
// table holds the fresh one and B's entry, which starts where A stopped.
// History must take the archived copy (both ended), or A's and B's
// intervals overlap and Who has two answers; and after the number's next
// claim too.
func TestJournalQuarantinedReleaseRestored(t *testing.T) {
	s := newStore(t)
	const n = 4
	now := baseMs()
	a := leasetest.MustClaim(t, s, req("a", n, n, now))
	a = mustExtend(t, s, a, now+5000)
	if err := s.Quarantine(ctxFor(t), n); err != nil {
		t.Fatal(err)
	}
	snap := backup(t, s) // quarantined; jcur = A, quarantined, EndMs = A's mark

	stopped := a.StartMs + 1000
	if err := s.Release(ctxFor(t), a, stopped); err != nil {
		t.Fatalf("A's release after the quarantine: %v", err)
	}
	if err := s.Unquarantine(ctxFor(t), n); err != nil {
		t.Fatal(err)
	}
	b := leasetest.MustClaim(t, s, req("b", n, n, now)) // archives A's entry, EndMs = stopped
	b = mustExtend(t, s, b, b.StartMs+2000)
	leasetest.MustRelease(t, s, b, b.MarkMs)
	c := leasetest.MustClaim(t, s, req("c", n, n, now)) // archives B's entry
	t.Logf("A issued [%d, %d); B [%d, %d); C from %d", a.StartMs, stopped, b.StartMs, b.MarkMs, c.StartMs)

	restoreTable(t, s, snap)
	after := connect(t, s.Table(), 0)
	h := leasetest.MustHistory(t, after, n)
	for _, e := range h {
		t.Logf("entry: token %d %s start %d end %q %d", e.Token, e.Holder, e.StartMs, e.End, e.EndMs)
	}
	ivs := lease.Intervals(h, leasetest.MustGet(t, after, n))
	if err := lease.CheckIntervals(ivs); err != nil {
		t.Error(err)
	}
	if iv, err := lease.Who(ivs, b.StartMs); err != nil || iv.Token != b.Token {
		t.Errorf("Who(%d), B's first timestamp = %+v, %v; want B (token %d)", b.StartMs, iv, err, b.Token)
	}

	// The restored number unquarantined and claimed: the claim's archive
	// keeps the journal table's ended copy, its UpdateItem overwrites the
	// stale jcur, and Who still names B.
	if err := after.Unquarantine(ctxFor(t), n); err != nil {
		t.Fatal(err)
	}
	leasetest.MustClaim(t, after, req("d", n, n, baseMs()))
	ivs = leasetest.MustIntervals(t, after, n)
	if iv, err := lease.Who(ivs, b.StartMs); err != nil || iv.Token != b.Token {
		t.Errorf("after the next claim, Who(B's start) = %+v, %v; want B (token %d)", iv, err, b.Token)
	}
}
