package dynamostore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestReviewQuarantinedEntryStretchedByRaise: DynamoDB's Quarantine ends
// the holder's jcur as quarantined without EndMs (endSet, not endSetMark,
// although the same write copies lease_expiry into quarantined_mark), and
// RaiseMarks on a quarantined item only moves quarantined_mark, leaving
// jcur alone. lease.Intervals then runs the quarantined entry to the
// record's mark — quarantined_mark, the raised one — and, after an
// unquarantine, to the next claim's PrevMarkMs, the raised mark again: the
// quarantined holder is named for the whole raise's gap.
//
// With the restore the runbook covers (the lease table restored to a backup
// made while the number was quarantined; after the backup it was
// unquarantined and B issued on it; raise-marks above everything issued),
// Who names A for B's IDs. Without a restore, Who names A in the raise's
// gap, where the conformance check wants ErrNotInJournal.
//
// It fails on the current code: Who answers A (wrong who answer; no
// duplicate). The PostgreSQL store's quarantine keeps the mark in end_ms.
func TestReviewQuarantinedEntryStretchedByRaise(t *testing.T) {
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
