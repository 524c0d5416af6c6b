package etcdstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestReviewQuarantinedEntryStretchedByRaise: etcd's Quarantine ends the
// holder's journal entry as quarantined with no EndMs (it does not read
// the mark), and RaiseMarks ends only an entry no write ended yet. So an
// entry ended by a quarantine whose holder's owner key is gone (the holder
// died, which is why numbers get quarantined) is never given an exact end:
// lease.Intervals runs it to the record's mark — the raised one — or to the
// next claim's PrevMarkMs, which is the raised mark too. The quarantined
// holder is then named for the whole raise's gap.
//
// With a restore, as the runbook has it (snapshot while the number was
// quarantined; after the snapshot the number was unquarantined and B
// issued on it; restore; raise-marks above everything issued), Who names
// A for B's IDs. It fails on the current code: Who(an ID B minted) answers
// A (wrong who answer; no duplicate). The PostgreSQL store's quarantine
// keeps the mark in end_ms and gets this right.
func TestReviewQuarantinedEntryStretchedByRaise(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	s := newStore(t, cli, etcdstore.Config{})
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
	// A's process dies; its owner key goes with its etcd lease.
	if _, err := cli.Revoke(ctxFor(t), ownerLease(t, cli, prefixFor(t), n)); err != nil {
		t.Fatal(err)
	}
	snap := c.Snapshot(t)

	// The history the restore loses: unquarantined, B issues above A.
	if err := s.Unquarantine(ctxFor(t), n); err != nil {
		t.Fatal(err)
	}
	b := leasetest.MustClaim(t, s, req("b", n, n, now))
	markB := now + 4000
	b = mustExtend(t, s, b, markB)
	bID := b.StartMs + 500 // a timestamp B issued
	t.Logf("A issued [%d, %d); B issued [%d, %d)", a.StartMs, markA, b.StartMs, markB)

	c.Restore(t, snap, etcdtest.RestoreOptions{})
	s2 := newStore(t, c.Client(t), etcdstore.Config{})
	raised := now + 60_000 // the runbook: above everything issued
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
