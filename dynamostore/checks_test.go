package dynamostore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestStore runs the store's own checks against dynalite, each on a table of
// its own.
func TestStore(t *testing.T) {
	endpoint(t)
	checks := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"ClaimRace", checkClaimRace},
		{"EpochsIncrease", checkEpochsIncrease},
		{"RenewalConditions", checkRenewalConditions},
		{"StaleRenewalAfterClaim", checkStaleRenewal},
		{"Quarantine", checkQuarantine},
		{"HandQuarantine", checkHandQuarantine},
		{"HandQuarantineKeepsFloor", checkHandQuarantineKeepsFloor},
		{"Release", checkRelease},
		{"ReleaseKeepsRaisedMark", checkReleaseKeepsRaisedMark},
		{"MaxAheadAndExclude", checkMaxAheadAndExclude},
		{"RaiseMarks", checkRaiseMarks},
		{"RegionsShareTable", checkRegions},
		{"GetList", checkGetList},
		{"Invalid", checkInvalid},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t)
		})
	}
}

// checkClaimRace: many goroutines race for one and for two numbers; exactly
// one winner per number, the others get ErrNoFreeNumber.
func checkClaimRace(t *testing.T) {
	for _, size := range []int{1, 2} {
		s := newStore(t)
		now := baseMs()
		const racers = 24
		var wg sync.WaitGroup
		leases := make([]*lease.Lease, racers)
		errs := make([]error, racers)
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				leases[i], errs[i] = s.Claim(ctxFor(t), req(fmt.Sprintf("racer-%d", i), 3, 3+size-1, now))
			}()
		}
		wg.Wait()
		won := map[int]string{}
		for i := range racers {
			switch {
			case errs[i] == nil:
				if prev, ok := won[leases[i].Machine]; ok {
					t.Fatalf("size %d: machine %d won by %s and racer-%d", size, leases[i].Machine, prev, i)
				}
				won[leases[i].Machine] = leases[i].Holder
				if leases[i].Token != 1 || leases[i].StartMs != now {
					t.Errorf("size %d: lease %+v, want epoch 1 and start %d", size, leases[i], now)
				}
			case !errors.Is(errs[i], lease.ErrNoFreeNumber):
				t.Errorf("size %d: racer %d: %v, want ErrNoFreeNumber", size, i, errs[i])
			}
		}
		if len(won) != size {
			t.Fatalf("size %d: %d numbers won (%v), want %d", size, len(won), won, size)
		}
		for n, h := range won {
			if rec := leasetest.MustGet(t, s, n); rec.Holder != h || rec.Token != 1 {
				t.Errorf("record %+v, want holder %s epoch 1", rec, h)
			}
		}
	}
}

// checkEpochsIncrease: every claim of a number adds one to its epoch, and
// each new holder starts strictly above the expiry it took over.
func checkEpochsIncrease(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	var prev *lease.Lease
	for i := range 5 {
		l := leasetest.MustClaim(t, s, req(fmt.Sprintf("h%d", i), 7, 7, now))
		if l.Token != uint64(i+1) {
			t.Fatalf("claim %d: epoch %d, want %d", i, l.Token, i+1)
		}
		if prev != nil && l.StartMs <= prev.MarkMs {
			t.Fatalf("claim %d starts at %d, not above the previous expiry %d", i, l.StartMs, prev.MarkMs)
		}
		if l.MarkMs != now+10_000 {
			t.Fatalf("claim %d: mark %d, want now + LeaseFor = %d", i, l.MarkMs, now+10_000)
		}
		prev = l
		now = l.MarkMs + 1 // the next claimer's clock is just past the expiry
	}
}

// checkRenewalConditions: a renewal needs holder, epoch and a later expiry;
// an earlier one keeps the stored mark.
func checkRenewalConditions(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("a", 1, 1, now))
	l2 := mustExtend(t, s, l, now+20_000)
	if l2.MarkMs != now+20_000 || leasetest.MustGet(t, s, 1).MarkMs != now+20_000 {
		t.Fatalf("mark after extend = %d / %+v, want %d", l2.MarkMs, leasetest.MustGet(t, s, 1), now+20_000)
	}
	if l3 := mustExtend(t, s, l2, now+15_000); l3.MarkMs != now+20_000 {
		t.Errorf("extend to an earlier mark returned %d, want the stored %d", l3.MarkMs, now+20_000)
	}
	if got := leasetest.MustGet(t, s, 1).MarkMs; got != now+20_000 {
		t.Errorf("extend to an earlier mark lowered it to %d", got)
	}
	wrongHolder := *l2
	wrongHolder.Holder = "b"
	if _, err := s.Extend(ctxFor(t), &wrongHolder, now+30_000, 0); !errors.Is(err, lease.ErrLost) {
		t.Errorf("renewal by another holder: %v, want ErrLost", err)
	}
	wrongEpoch := *l2
	wrongEpoch.Token = 99
	if _, err := s.Extend(ctxFor(t), &wrongEpoch, now+30_000, 0); !errors.Is(err, lease.ErrLost) {
		t.Errorf("renewal with another epoch: %v, want ErrLost", err)
	}
	if got := leasetest.MustGet(t, s, 1).MarkMs; got != now+20_000 {
		t.Errorf("failed renewals moved the mark to %d", got)
	}
}

// checkStaleRenewal: A's renewal after B claimed the expired number fails,
// and B's epoch is A's plus one.
func checkStaleRenewal(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	a := leasetest.MustClaim(t, s, req("a", 4, 4, now))
	b := leasetest.MustClaim(t, s, req("b", 4, 4, a.MarkMs+1))
	if b.Token != a.Token+1 || b.StartMs <= a.MarkMs {
		t.Fatalf("b = %+v after a = %+v", b, a)
	}
	if _, err := s.Extend(ctxFor(t), a, a.MarkMs+50_000, 0); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("stale renewal: %v, want ErrLost", err)
	}
	if err := s.Release(ctxFor(t), a, a.MarkMs); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("stale release: %v, want ErrLost", err)
	}
	if rec := leasetest.MustGet(t, s, 4); rec.Holder != "b" || rec.Token != b.Token || rec.MarkMs != b.MarkMs {
		t.Fatalf("record %+v, want b's lease %+v untouched", rec, b)
	}
	mustExtend(t, s, b, b.MarkMs+1000)
}

// checkQuarantine: a quarantine defeats the holder's renewal and every
// claim; unquarantine restores the mark the holder had.
func checkQuarantine(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	l := mustExtend(t, s, leasetest.MustClaim(t, s, req("a", 2, 2, now)), now+30_000)
	if err := s.Quarantine(ctxFor(t), 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Quarantine(ctxFor(t), 2); err != nil {
		t.Fatalf("second quarantine: %v", err)
	}
	rec := leasetest.MustGet(t, s, 2)
	if !rec.Quarantined || rec.Holder != lease.QuarantineHolder || rec.Token != l.Token+1 || rec.MarkMs != now+30_000 || rec.ExpiresMs != lease.QuarantineExpiryMs {
		t.Fatalf("quarantined record %+v", rec)
	}
	if _, err := s.Extend(ctxFor(t), l, now+40_000, 0); !errors.Is(err, lease.ErrQuarantined) {
		t.Fatalf("renewal of a quarantined number: %v, want ErrQuarantined", err)
	}
	far := lease.QuarantineExpiryMs + 1
	if _, err := s.Claim(ctxFor(t), req("b", 2, 2, far)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Fatalf("claim of a quarantined number, even with a clock past 2100: %v, want ErrNoFreeNumber", err)
	}
	// The fenced holder gives up with its last timestamp; the kept mark
	// comes down to it, no lower.
	if err := s.Release(ctxFor(t), l, now+5_000); err != nil {
		t.Fatalf("release by the quarantined holder: %v", err)
	}
	if err := s.Unquarantine(ctxFor(t), 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Unquarantine(ctxFor(t), 2); !errors.Is(err, lease.ErrNotHeld) {
		t.Fatalf("second unquarantine: %v, want ErrNotHeld", err)
	}
	rec = leasetest.MustGet(t, s, 2)
	if rec.Quarantined || rec.Held() || rec.MarkMs != now+5_000 {
		t.Fatalf("unquarantined record %+v, want free with mark %d", rec, now+5_000)
	}
	b := leasetest.MustClaim(t, s, req("b", 2, 2, now+6_000))
	if b.Token != l.Token+2 || b.StartMs != now+6_000 {
		t.Fatalf("claim after unquarantine %+v", b)
	}
}

// checkHandQuarantine: runbook command 3 as written (no kept mark) also
// fences; unquarantine then restores a mark MaxReserve ahead of now.
func checkHandQuarantine(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("a", 3, 3, now))
	// aws dynamodb update-item … --update-expression "SET #h = :q, lease_expiry = :far ADD lease_epoch :one"
	if err := dynamostore.RunbookQuarantine(ctxFor(t), s, 3); err != nil {
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
	if err := dynamostore.RunbookQuarantine(ctxFor(t), s, 8); err != nil {
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

// checkRelease: release records the last timestamp as the mark and frees
// the number; the next holder starts at or above it.
func checkRelease(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	l := mustExtend(t, s, leasetest.MustClaim(t, s, req("a", 5, 5, now)), now+30_000)
	if err := s.Release(ctxFor(t), l, now+1234); err != nil {
		t.Fatal(err)
	}
	if rec := leasetest.MustGet(t, s, 5); rec.Held() || rec.MarkMs != now+1234 || rec.Token != l.Token {
		t.Fatalf("released record %+v", rec)
	}
	if err := s.Release(ctxFor(t), l, now+1234); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("second release: %v, want ErrLost", err)
	}
	// A claimer whose clock is behind the released mark starts at the mark.
	b := leasetest.MustClaim(t, s, req("b", 5, 5, now+1000))
	if b.StartMs != now+1234 || b.Token != l.Token+1 || b.MarkMs < b.StartMs {
		t.Fatalf("claim after release %+v, want start %d", b, now+1234)
	}
}

// checkReleaseKeepsRaisedMark: a mark raised by someone else survives the
// holder's release attempt (refused: RaiseMarks fenced it).
func checkReleaseKeepsRaisedMark(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("a", 6, 6, now))
	if _, err := s.RaiseMarks(ctxFor(t), lease.Range{Lo: 6, Hi: 6}, now+60_000); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctxFor(t), l, now+100); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("release by a holder RaiseMarks fenced: %v, want ErrLost", err)
	}
	if rec := leasetest.MustGet(t, s, 6); rec.Held() || rec.MarkMs != now+60_000 {
		t.Fatalf("record %+v, want free with the raised mark %d", rec, now+60_000)
	}
}

// checkMaxAheadAndExclude: numbers with marks too far ahead and excluded
// numbers are passed over; expired ones are preferred.
func checkMaxAheadAndExclude(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	for n, mark := range map[int]int64{10: now + 10_000, 11: now + 500} {
		l := mustExtend(t, s, leasetest.MustClaim(t, s, req("x", n, n, now)), mark)
		if err := s.Release(ctxFor(t), l, mark); err != nil {
			t.Fatal(err)
		}
	}
	r := req("y", 10, 12, now)
	r.MaxAhead = time.Second
	r.Exclude = []int{12}
	l := leasetest.MustClaim(t, s, r)
	if l.Machine != 11 || l.StartMs != now+500 {
		t.Fatalf("claim = %+v, want 11 starting at its mark", l)
	}
	if _, err := s.Claim(ctxFor(t), r); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Fatalf("claim with 10 too far ahead, 11 held, 12 excluded: %v", err)
	}
	r.Exclude = nil
	if l := leasetest.MustClaim(t, s, r); l.Machine != 12 {
		t.Fatalf("claim = %+v, want 12 (never claimed) before 10 (ahead)", l)
	}
}

// checkRaiseMarks: every number in the range, held, free, never claimed or
// quarantined, ends with a mark at least the one raised to, and every
// holder — below the raised mark or above it — is fenced: its next
// extension gets ErrLost (a holder whose claim survived in a restored table
// must not extend above the raised mark), and its number is free.
func checkRaiseMarks(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	held := leasetest.MustClaim(t, s, req("a", 0, 0, now))
	free := leasetest.MustClaim(t, s, req("b", 1, 1, now))
	if err := s.Release(ctxFor(t), free, now+10); err != nil {
		t.Fatal(err)
	}
	if err := s.Quarantine(ctxFor(t), 2); err != nil {
		t.Fatal(err)
	}
	high := mustExtend(t, s, leasetest.MustClaim(t, s, req("c", 3, 3, now)), now+999_000)
	m := now + 100_000
	got, err := s.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 4}, m)
	if err != nil || got != 5 {
		t.Fatalf("RaiseMarks = %d, %v; want 5 (four marks raised, and 3's holder fenced under its higher mark)", got, err)
	}
	for n := range 5 {
		rec := leasetest.MustGet(t, s, n)
		if rec.MarkMs < m {
			t.Errorf("machine %d: %+v, mark below %d", n, rec, m)
		}
		if rec.Held() && !rec.Quarantined {
			t.Errorf("machine %d: %+v still held after RaiseMarks", n, rec)
		}
	}
	for _, l := range []*lease.Lease{held, high} {
		if _, err := s.Extend(ctxFor(t), l, now+2_000_000, 0); !errors.Is(err, lease.ErrLost) {
			t.Errorf("extend of machine %d held across RaiseMarks: %v, want ErrLost", l.Machine, err)
		}
		if err := s.Release(ctxFor(t), l, now+5); !errors.Is(err, lease.ErrLost) {
			t.Errorf("release of machine %d held across RaiseMarks: %v, want ErrLost", l.Machine, err)
		}
	}
	if rec := leasetest.MustGet(t, s, 3); rec.MarkMs != now+999_000 || rec.Token != high.Token+1 {
		t.Errorf("machine 3 after RaiseMarks: %+v, want its higher mark kept and one more epoch", rec)
	}
	if l := leasetest.MustClaim(t, s, req("d", 0, 0, now)); l.StartMs < m || l.Token != held.Token+2 {
		t.Errorf("claim after RaiseMarks %+v, want start ≥ %d and epoch %d", l, m, held.Token+2)
	}
	if err := s.Unquarantine(ctxFor(t), 2); err != nil {
		t.Fatal(err)
	}
	if rec := leasetest.MustGet(t, s, 2); rec.MarkMs != m {
		t.Errorf("unquarantined after raise: %+v, want mark %d", rec, m)
	}
	if n, err := s.RaiseMarks(ctxFor(t), lease.Range{Lo: 1, Hi: 4}, m); err != nil || n != 0 {
		t.Errorf("RaiseMarks again = %d, %v; want 0: nothing held, nothing lower", n, err)
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

func checkGetList(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	if rec := leasetest.MustGet(t, s, 42); rec != (lease.Record{Machine: 42}) {
		t.Fatalf("never-claimed record %+v, want zero", rec)
	}
	for _, n := range []int{9, 3, 1000} {
		leasetest.MustClaim(t, s, req(fmt.Sprint("h", n), n, n, now))
	}
	recs, err := s.List(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Machine != 3 || recs[1].Machine != 9 || recs[2].Machine != 1000 || recs[2].Holder != "h1000" {
		t.Fatalf("List = %+v", recs)
	}
}

func checkInvalid(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	bad := []lease.ClaimRequest{
		req("", 0, 0, now),
		req(lease.QuarantineHolder, 0, 0, now),
		req("a", 0, 1024, now),
		req("a", 5, 4, now),
		req("a", 0, 0, 0),
		{Holder: "a", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: now},
	}
	for _, r := range bad {
		if _, err := s.Claim(ctxFor(t), r); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("Claim(%+v) = %v, want ErrInvalid", r, err)
		}
	}
	if _, err := s.Get(ctxFor(t), 1024); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Get(1024) = %v", err)
	}
	if err := s.Quarantine(ctxFor(t), -1); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Quarantine(-1) = %v", err)
	}
	if _, err := dynamostore.New(nil, dynamostore.Config{}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("New(nil) = %v", err)
	}
	if _, err := dynamostore.New(s.Client(), dynamostore.Config{Region: -1}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("New(region -1) = %v", err)
	}
}
