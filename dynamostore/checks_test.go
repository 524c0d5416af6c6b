package dynamostore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestStore runs the checks of what is particular to the DynamoDB store —
// its items (the kept mark of a quarantined number, a quarantine written by
// hand), regions sharing one table, its 1024 numbers per region — against
// dynalite, each on a table of its own. The behaviour every store shares is
// checked by TestConformance.
func TestStore(t *testing.T) {
	endpoint(t)
	checks := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"QuarantinedHolderReleases", checkQuarantinedHolderReleases},
		{"HandQuarantine", checkHandQuarantine},
		{"HandQuarantineKeepsFloor", checkHandQuarantineKeepsFloor},
		{"HandQuarantineLongestReserve", checkHandQuarantineLongestReserve},
		{"HandQuarantineRaisedLow", checkHandQuarantineRaisedLow},
		{"RegionsShareTable", checkRegions},
		{"Invalid", checkInvalid},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t)
		})
	}
}

// checkQuarantinedHolderReleases: a quarantined item keeps its holder's mark
// (quarantined_mark). The quarantined holder's release, which this store
// accepts (the suite lets a store refuse it), brings the kept mark down to
// the timestamp released with, no lower; Unquarantine restores exactly that
// mark, and the next claim adds one to the epoch again.
func checkQuarantinedHolderReleases(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	l := mustExtend(t, s, leasetest.MustClaim(t, s, req("a", 2, 2, now)), now+30_000)
	if err := s.Quarantine(ctxFor(t), 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctxFor(t), l, now+5_000); err != nil {
		t.Fatalf("release by the quarantined holder: %v", err)
	}
	if err := s.Unquarantine(ctxFor(t), 2); err != nil {
		t.Fatal(err)
	}
	if rec := leasetest.MustGet(t, s, 2); rec.Quarantined || rec.Held() || rec.MarkMs != now+5_000 {
		t.Fatalf("unquarantined record %+v, want free with mark %d", rec, now+5_000)
	}
	if b := leasetest.MustClaim(t, s, req("b", 2, 2, now+6_000)); b.Token != l.Token+2 || b.StartMs != now+6_000 {
		t.Fatalf("claim after unquarantine %+v, want epoch %d starting at %d", b, l.Token+2, now+6_000)
	}
}

// checkHandQuarantine: the operator's quarantine typed by hand — holder
// "QUARANTINED", expiry 2100-01-01, epoch + 1, and no kept mark — also
// fences; unquarantine then restores a mark MaxReserve ahead of now.
func checkHandQuarantine(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("a", 3, 3, now))
	// aws dynamodb update-item … --update-expression "SET #h = :q, lease_expiry = :far ADD lease_epoch :one"
	if err := dynamostore.HandQuarantine(ctxFor(t), s, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Extend(ctxFor(t), l, now+40_000, 0); !errors.Is(err, lease.ErrQuarantined) {
		t.Fatalf("renewal: %v, want ErrQuarantined", err)
	}
	if err := s.Unquarantine(ctxFor(t), 3); err != nil {
		t.Fatal(err)
	}
	if rec := leasetest.MustGet(t, s, 3); rec.MarkMs < time.Now().Add(dynamostore.DefaultMaxReserve).UnixMilli()-5000 {
		t.Fatalf("record %+v: mark not MaxReserve ahead", rec)
	}
}

// checkHandQuarantineKeepsFloor: after raise-marks put the floor an hour
// ahead, a number quarantined by hand (no kept mark) is unquarantined with
// a mark at or above that floor, not at now + MaxReserve (5 minutes), which
// would let its next holder issue below the raised marks.
func checkHandQuarantineKeepsFloor(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	floor := now + time.Hour.Milliseconds()
	if _, err := s.RaiseMarks(ctxFor(t), lease.Range{Lo: 8, Hi: 8}, floor); err != nil {
		t.Fatal(err)
	}
	if err := dynamostore.HandQuarantine(ctxFor(t), s, 8); err != nil {
		t.Fatal(err)
	}
	if err := s.Unquarantine(ctxFor(t), 8); err != nil {
		t.Fatal(err)
	}
	if rec := leasetest.MustGet(t, s, 8); rec.MarkMs < floor {
		t.Fatalf("unquarantined record %+v: mark %d below the floor %d raise-marks left", rec, rec.MarkMs, floor)
	}
	if l := leasetest.MustClaim(t, s, req("b", 8, 8, now)); l.StartMs < floor {
		t.Fatalf("claim after unquarantine %+v starts below the floor %d", l, floor)
	}
}

// checkHandQuarantineLongestReserve: a holder may reserve longer than the
// store's MaxReserve (5 min): StartKeeper bounds a DynamoDB holder only by
// MaxRestoreWindow (6 min), through its restore window. Quarantined by
// hand (its mark not kept) and unquarantined at once, its number must go
// to the next holder above that holder's mark, not at now + MaxReserve.
func checkHandQuarantineLongestReserve(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("a", 5, 5, now))
	// The longest reservation a keeper on this store is allowed: its
	// restore window, max(Reserve, SelfFence) × 1.1 + 1 s, within 6 min.
	longest := (dynamostore.MaxRestoreWindow - time.Second) * 10 / 11
	l = mustExtend(t, s, l, now+longest.Milliseconds())
	if err := dynamostore.HandQuarantine(ctxFor(t), s, 5); err != nil {
		t.Fatal(err)
	}
	if err := s.Unquarantine(ctxFor(t), 5); err != nil {
		t.Fatal(err)
	}
	if b := leasetest.MustClaim(t, s, req("b", 5, 5, now)); b.StartMs < l.MarkMs {
		t.Fatalf("claim after the hand quarantine starts at %d, below %d, the mark of the holder before (reserved %s ahead)",
			b.StartMs, l.MarkMs, longest)
	}
}

// checkHandQuarantineRaisedLow: raise-marks over a number quarantined by
// hand, to a mark below its holder's (lost) one, must not become the mark
// Unquarantine gives back: the next holder still starts above the holder's
// mark.
func checkHandQuarantineRaisedLow(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("a", 6, 6, now))
	l = mustExtend(t, s, l, now+(5*time.Minute).Milliseconds())
	if err := dynamostore.HandQuarantine(ctxFor(t), s, 6); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RaiseMarks(ctxFor(t), lease.Range{Lo: 6, Hi: 6}, now+time.Minute.Milliseconds()); err != nil {
		t.Fatal(err)
	}
	if err := s.Unquarantine(ctxFor(t), 6); err != nil {
		t.Fatal(err)
	}
	if b := leasetest.MustClaim(t, s, req("b", 6, 6, now)); b.StartMs < l.MarkMs {
		t.Fatalf("claim after a hand quarantine and a raise to %d starts at %d, below %d, the mark of the holder before",
			now+time.Minute.Milliseconds(), b.StartMs, l.MarkMs)
	}
}

// checkRegions: two regions share one table without sharing numbers.
func checkRegions(t *testing.T) {
	table := tableFor(t)
	s0, s1 := connect(t, table, 0), connect(t, table, 1)
	if err := s0.CreateTable(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	now := baseMs()
	a := leasetest.MustClaim(t, s0, req("a", 7, 7, now))
	b := leasetest.MustClaim(t, s1, req("b", 7, 7, now))
	if a.Region != 0 || b.Region != 1 || a.Token != 1 || b.Token != 1 {
		t.Fatalf("a = %+v, b = %+v", a, b)
	}
	l0, _ := s0.List(ctxFor(t))
	l1, _ := s1.List(ctxFor(t))
	if len(l0) != 1 || l0[0].Holder != "a" || len(l1) != 1 || l1[0].Holder != "b" || l1[0].Machine != 7 {
		t.Fatalf("lists %+v / %+v", l0, l1)
	}
}

// checkInvalid: the limits of this store beyond the shared ones: numbers
// 0–1023 only, a client and a non-negative region for New.
func checkInvalid(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	if _, err := s.Claim(ctxFor(t), req("a", 0, 1024, now)); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Claim in 0-1024 = %v, want ErrInvalid", err)
	}
	if _, err := s.Get(ctxFor(t), 1024); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Get(1024) = %v, want ErrInvalid", err)
	}
	if err := s.Quarantine(ctxFor(t), 1024); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Quarantine(1024) = %v, want ErrInvalid", err)
	}
	if _, err := dynamostore.New(nil, dynamostore.Config{}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("New(nil) = %v, want ErrInvalid", err)
	}
	if _, err := dynamostore.New(s.Client(), dynamostore.Config{Region: -1}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("New(region -1) = %v, want ErrInvalid", err)
	}
	// 2^54 - 1 would put machines 1021-1023 on the registry, identity and
	// fleet items; 2^54 on region 0.
	for _, r := range []int{dynamostore.MaxRegion, 1<<54 - 1, 1 << 54} {
		if _, err := dynamostore.New(s.Client(), dynamostore.Config{Region: r}); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("New(region %d) = %v, want ErrInvalid", r, err)
		}
	}
}
