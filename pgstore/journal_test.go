package pgstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/pgstore"
)

func journalReq(holder string, n int, nowMs int64) lease.ClaimRequest {
	return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: n, Hi: n}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
}

// TestJournalHandQuarantine: the operator quarantines a held row by hand
// with the UPDATE of the package documentation, which writes nothing to
// the journal. The holder's entry stays open and reads as lost, ending at
// the mark the UPDATE kept — the right holder, up to its last mark, and
// nobody past it. A raise of the marks over the quarantined row (which
// moves the row's kept mark) ends the entry, as quarantined at the mark
// kept before, so the raised stretch names nobody; and so does
// Unquarantine. The store's own Quarantine ends the entry at once, and its
// end holds across a raise too.
func TestJournalHandQuarantine(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	s := openStore(t, pool, newTable(t, pool))
	nowMs := time.Now().UnixMilli()
	holdAndQuarantine := func(n int, byHand bool) *lease.Lease {
		t.Helper()
		l := leasetest.MustClaim(t, s, journalReq("held", n, nowMs))
		l = leasetest.MustExtend(t, s, l, l.MarkMs+5000, 10*time.Second)
		var err error
		if byHand {
			err = handQuarantine(t, s, n)
		} else {
			err = s.Quarantine(t.Context(), n)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Extend(t.Context(), l, l.MarkMs+1000, 10*time.Second); !errors.Is(err, lease.ErrQuarantined) {
			t.Fatalf("Extend after the quarantine: %v, want ErrQuarantined", err)
		}
		return l
	}
	whoIs := func(n int, ms int64, want *lease.Lease) {
		t.Helper()
		ivs := leasetest.MustIntervals(t, s, n)
		iv, err := lease.Who(ivs, ms)
		switch {
		case want == nil && !errors.Is(err, lease.ErrNotInJournal):
			t.Errorf("number %d: Who(%d) = %+v, %v; want ErrNotInJournal", n, ms, iv, err)
		case want != nil && (err != nil || iv.Claim != want.Claim):
			t.Errorf("number %d: Who(%d) = %+v, %v; want the holder's claim %s", n, ms, iv, err, want.Claim)
		}
	}

	// By hand, then the marks raised over it.
	l := holdAndQuarantine(1, true)
	h := leasetest.MustHistory(t, s, 1)
	ivs := leasetest.MustIntervals(t, s, 1)
	if len(h) != 1 || h[0].End != lease.EndNone || ivs[0].State != lease.StateLost || ivs[0].UntilMs != l.MarkMs {
		t.Fatalf("after a quarantine by hand: journal %+v, interval %+v; want the open entry, lost, until the holder's mark %d", h, ivs, l.MarkMs)
	}
	whoIs(1, l.MarkMs-1, l)
	whoIs(1, l.MarkMs, nil)
	raised := l.MarkMs + 60_000
	if _, err := s.RaiseMarks(t.Context(), lease.Range{Lo: 0, Hi: 3}, raised); err != nil {
		t.Fatal(err)
	}
	h = leasetest.MustHistory(t, s, 1)
	if h[0].End != lease.EndQuarantined || h[0].EndMs != l.MarkMs {
		t.Errorf("after a raise over the row quarantined by hand: %+v, want ended %q at the holder's mark %d", h[0], lease.EndQuarantined, l.MarkMs)
	}
	whoIs(1, l.MarkMs-1, l)
	whoIs(1, raised-1, nil)

	// By hand, unquarantined, its free mark raised, claimed again.
	l = holdAndQuarantine(2, true)
	if err := s.Unquarantine(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	if h := leasetest.MustHistory(t, s, 2); h[0].End != lease.EndQuarantined || h[0].EndMs != l.MarkMs {
		t.Errorf("after Unquarantine of a row quarantined by hand: %+v, want ended %q at %d", h[0], lease.EndQuarantined, l.MarkMs)
	}
	if _, err := s.RaiseMarks(t.Context(), lease.Range{Lo: 2, Hi: 2}, raised); err != nil {
		t.Fatal(err)
	}
	next := leasetest.MustClaim(t, s, journalReq("next", 2, nowMs))
	next = leasetest.MustExtend(t, s, next, next.StartMs+1000, 10*time.Second)
	whoIs(2, l.MarkMs-1, l)
	whoIs(2, raised-1, nil)
	whoIs(2, next.StartMs, next)

	// By the store, then raised.
	l = holdAndQuarantine(3, false)
	if _, err := s.RaiseMarks(t.Context(), lease.Range{Lo: 3, Hi: 3}, raised); err != nil {
		t.Fatal(err)
	}
	if h := leasetest.MustHistory(t, s, 3); h[0].End != lease.EndQuarantined || h[0].EndMs != l.MarkMs {
		t.Errorf("Quarantine: %+v, want ended %q at the holder's mark %d", h[0], lease.EndQuarantined, l.MarkMs)
	}
	whoIs(3, l.MarkMs-1, l)
	whoIs(3, raised-1, nil)
}

// TestJournalLeaseTableRestoredAlone: the lease table's rows are written
// back from an earlier copy (a restore no server identity shows) while its
// journal is not, and the operator raises the marks. The epoch counts up
// again, so two claims with one token are in the journal: they stay two
// entries (claim numbers continue from the journal's newest), in the
// order they were made, and the intervals do not overlap.
func TestJournalLeaseTableRestoredAlone(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s := openStore(t, pool, table)
	now := time.Now().UnixMilli()
	k0 := leasetest.MustClaim(t, s, journalReq("p", 3, now))
	leasetest.MustRelease(t, s, k0, now+10)
	tbl, backup := pgx.Identifier{table}.Sanitize(), pgx.Identifier{table + "_ident"}.Sanitize() // newTable drops it
	if _, err := pool.Exec(t.Context(), "CREATE TABLE "+backup+" AS SELECT * FROM "+tbl); err != nil {
		t.Fatal(err)
	}
	k1 := leasetest.MustExtend(t, s, leasetest.MustClaim(t, s, journalReq("p", 3, now+20)), now+5000, 10*time.Second)
	if _, err := pool.Exec(t.Context(), "DELETE FROM "+tbl+"; INSERT INTO "+tbl+" SELECT * FROM "+backup); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RaiseMarks(t.Context(), lease.Range{Lo: 0, Hi: 7}, now+6000); err != nil {
		t.Fatal(err)
	}
	k2 := leasetest.MustClaim(t, s, journalReq("p", 3, now+30))
	if k2.Token != k1.Token {
		t.Fatalf("tokens %d and %d: the restore did not repeat the epoch, so this test shows nothing", k1.Token, k2.Token)
	}
	h := leasetest.MustHistory(t, s, 3)
	if len(h) != 3 || h[0].Claim != k0.Claim || h[1].Claim != k1.Claim || h[2].Claim != k2.Claim {
		t.Fatalf("journal = %+v, want k0, k1, k2 in order", h)
	}
	ivs := leasetest.MustIntervals(t, s, 3)
	if iv, err := lease.Who(ivs, now+4999); err != nil || iv.Claim != k1.Claim {
		t.Errorf("Who(k1's last mark - 1) = %+v, %v; want k1", iv, err)
	}
}

// TestJournalMigratesOldTable: a lease table made by the version before
// the journal (no claim_seq, no <table>_claims), with a holder on it. Until
// Migrate runs, a claim fails and says to run it; after, claims write the
// journal, the holder from before renews and releases (it has no entry,
// and its release writes none), and Migrate runs again harmlessly.
func TestJournalMigratesOldTable(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s := openStore(t, pool, table)
	now := time.Now().UnixMilli()
	old := leasetest.MustClaim(t, s, journalReq("before", 1, now))
	if _, err := pool.Exec(t.Context(), "DROP TABLE "+pgx.Identifier{table + "_claims"}.Sanitize()+
		"; ALTER TABLE "+pgx.Identifier{table}.Sanitize()+" DROP COLUMN claim_seq"); err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.New(pool, pgstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(t.Context(), journalReq("after", 2, now)); err == nil || !strings.Contains(err.Error(), "leases init") {
		t.Fatalf("claim on the table before Migrate: %v, want an error saying to run Migrate (snowfence leases init)", err)
	}
	for range 2 {
		if err := st.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	old = leasetest.MustExtend(t, st, old, now+5000, 10*time.Second)
	leasetest.MustRelease(t, st, old, now+5000)
	if h := leasetest.MustHistory(t, st, 1); len(h) != 0 {
		t.Errorf("journal of the number held across the upgrade = %+v, want none", h)
	}
	l := leasetest.MustClaim(t, st, journalReq("after", 1, now))
	if h := leasetest.MustHistory(t, st, 1); len(h) != 1 || h[0].Claim != l.Claim || h[0].PrevMarkMs != now+5000 {
		t.Errorf("journal after the first claim since the upgrade = %+v, want its entry with the released mark %d", h, now+5000)
	}
}
