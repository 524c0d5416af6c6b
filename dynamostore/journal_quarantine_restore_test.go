package dynamostore_test

import (
	"errors"
	"testing"
	"time"

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

// TestJournalQuarantinedEntryNotStretchedByRaise: a raise of the marks does
// not stretch a quarantined holder's journal entry over the raise's gap, so
// Who never names it for a later holder's IDs. DynamoDB's Quarantine ended
// the holder's jcur as quarantined without EndMs (endSet, not endSetMark,
// although the same write copies lease_expiry into quarantined_mark), and
// RaiseMarks on a quarantined item only moves quarantined_mark, leaving
// jcur alone. lease.Intervals then ran the quarantined entry to the
// record's mark — quarantined_mark, the raised one — and, after an
// unquarantine, to the next claim's PrevMarkMs, the raised mark again: the
// quarantined holder is named for the whole raise's gap.
//
// With the restore the runbook covers (the lease table restored to a backup
// made while the number was quarantined; after the backup it was
// unquarantined and B issued on it; raise-marks above everything issued),
// Who named A for B's IDs. Without a restore, Who named A in the raise's
// gap, where the conformance check wants ErrNotInJournal.
//
// Before the fix Who answered A (a wrong who answer; no duplicate; an
// adversarial review of the journal found it). The PostgreSQL store's
// quarantine keeps the mark in end_ms.
func TestJournalQuarantinedEntryNotStretchedByRaise(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const n = 3
	now := baseMs()
	a := leasetest.MustClaim(t, s, req("a", n, n, now))
	markA := now + 1000
	a = mustExtend(t, s, a, markA)
	if err := s.Quarantine(ctxFor(t), n); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Extend(ctxFor(t), a, markA+1000, 10*time.Second); !errors.Is(err, lease.ErrQuarantined) {
		t.Fatalf("A's renewal after the quarantine: %v, want ErrQuarantined (A stops at %d)", err, markA)
	}
	markA = leasetest.MustGet(t, s, n).MarkMs // the mark the quarantine kept: A's reservation
	saved := backup(t, s)

	// The history the restore loses: unquarantined, B issues above A.
	if err := s.Unquarantine(ctxFor(t), n); err != nil {
		t.Fatal(err)
	}
	b := leasetest.MustClaim(t, s, req("b", n, n, now))
	markB := b.StartMs + 3000
	b = mustExtend(t, s, b, markB)
	bID := b.StartMs + 500
	t.Logf("A issued [%d, %d); B issued [%d, %d)", a.StartMs, markA, b.StartMs, markB)

	restoreTable(t, s, saved)
	s2 := connect(t, s.Table(), 0)
	raised := markB + 60_000 // the runbook: above everything issued
	if _, err := s2.RaiseMarks(ctxFor(t), lease.Range{Lo: n, Hi: n}, raised); err != nil {
		t.Fatal(err)
	}
	ivs := leasetest.MustIntervals(t, s2, n)
	t.Logf("intervals after the raise: %+v", ivs)
	for _, ms := range []int64{bID, markB, raised - 1} {
		if iv, err := lease.Who(ivs, ms); err == nil && iv.Token == a.Token {
			t.Errorf("Who(%d) = A (token %d, %s, %d–%d), but A stopped at %d (its renewal was refused by the quarantine); "+
				"B minted %d in the restored-away history", ms, iv.Token, iv.State, iv.FromMs, iv.UntilMs, markA, bID)
		}
	}
}
