package leasetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// checkClaimRace: many claimers, each with its own Store value, race for
// ranges of one to three numbers: each number is won exactly once, every
// loser gets ErrNoFreeNumber, and the store names the winner. A number never
// claimed starts at the claimer's clock; in a table its first epoch is 1
// and the claim writes the expiry NowMs + LeaseFor.
func checkClaimRace(t *testing.T, s *suite) {
	for _, size := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("range of %d", size), func(t *testing.T) {
			const claimers = 12
			st := s.store(t)
			nowMs := now()
			leases, errs := s.race(t, st, claimers, func(i int) lease.ClaimRequest {
				return s.req(fmt.Sprintf("h%d", i), 10, 10+size-1, nowMs)
			})
			winners := make(map[int]string)
			for i := range claimers {
				switch {
				case errs[i] == nil:
					if prev, ok := winners[leases[i].Machine]; ok {
						t.Errorf("machine %d claimed by both %s and h%d", leases[i].Machine, prev, i)
					}
					winners[leases[i].Machine] = leases[i].Holder
					if l := leases[i]; l.StartMs != nowMs {
						t.Errorf("claim of never-claimed machine %d starts at %d, want the claimer's clock %d", l.Machine, l.StartMs, nowMs)
					}
					if l := leases[i]; s.h.ClockExpiry && (l.Token != 1 || l.MarkMs != s.top(nowMs)) {
						t.Errorf("claim of never-claimed machine %d: epoch %d mark %d, want epoch 1 and mark NowMs + LeaseFor = %d",
							l.Machine, l.Token, l.MarkMs, s.top(nowMs))
					}
				case errors.Is(errs[i], lease.ErrNoFreeNumber):
				default:
					t.Errorf("claimer h%d: %v, want a lease or ErrNoFreeNumber", i, errs[i])
				}
			}
			if len(winners) != size {
				t.Errorf("%d numbers claimed, want %d: %v", len(winners), size, winners)
			}
			for n, holder := range winners {
				if rec := MustGet(t, st, n); rec.Holder != holder {
					t.Errorf("Get(%d).Holder = %q, want winner %q", n, rec.Holder, holder)
				}
			}
		})
	}
}

// race runs claimers claims at once, with the request req(i) makes for
// claimer i: the even claimers through st itself, at once (a store keeps
// per-value state, such as the leases it claimed, that concurrent claims
// share), the odd ones each through its own Store value on st's keyspace.
func (s *suite) race(t *testing.T, st lease.Store, claimers int, req func(i int) lease.ClaimRequest) ([]*lease.Lease, []error) {
	stores := make([]lease.Store, claimers)
	reqs := make([]lease.ClaimRequest, claimers)
	for i := range stores {
		stores[i], reqs[i] = st, req(i)
		if i%2 == 1 {
			stores[i] = s.reopen(t, st)
		}
	}
	var wg sync.WaitGroup
	leases := make([]*lease.Lease, claimers)
	errs := make([]error, claimers)
	for i := range claimers {
		wg.Go(func() { leases[i], errs[i] = stores[i].Claim(ctxFor(t), reqs[i]) })
	}
	wg.Wait()
	return leases, errs
}

// checkClaimOnlyWhenFree: a held number cannot be claimed; once its lease
// lapses (for tables: once the claimer's clock is past its expiry, and not
// at it) it can, with a larger token and a start at or above the old mark.
func checkClaimOnlyWhenFree(t *testing.T, s *suite) {
	st := s.store(t)
	other := s.reopen(t, st)
	nowMs := now()
	l := MustClaim(t, st, s.req("a", 0, 0, nowMs))
	l = s.mustExtend(t, st, l, s.top(nowMs)+1000)
	if _, err := other.Claim(ctxFor(t), s.req("b", 0, 0, nowMs)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Fatalf("Claim of a held number: %v, want ErrNoFreeNumber", err)
	}
	rec := MustGet(t, st, 0)
	if s.h.ClockExpiry {
		if rec.ExpiresMs != rec.MarkMs || rec.MarkMs != l.MarkMs {
			t.Errorf("record %+v: want expiry = mark = %d (a table's lease_expiry is the mark)", rec, l.MarkMs)
		}
		if _, err := other.Claim(ctxFor(t), s.req("b", 0, 0, rec.ExpiresMs)); !errors.Is(err, lease.ErrNoFreeNumber) {
			t.Errorf("Claim by a clock reading exactly the expiry: %v, want ErrNoFreeNumber (expiry < now is required)", err)
		}
	}
	at := s.expire(t, st, l, nowMs)
	l2 := MustClaim(t, other, s.req("b", 0, 0, at))
	if l2.Token <= l.Token {
		t.Errorf("token after expiry %d, want > %d", l2.Token, l.Token)
	}
	if l2.StartMs < l.MarkMs {
		t.Errorf("new holder starts at %d, below the old holder's mark %d", l2.StartMs, l.MarkMs)
	}
	if s.h.ClockExpiry {
		if l2.Token != l.Token+1 {
			t.Errorf("epoch after a claim %d, want %d (+1)", l2.Token, l.Token+1)
		}
		if l2.StartMs <= rec.ExpiresMs {
			t.Errorf("new holder starts at %d, want strictly above the old expiry %d", l2.StartMs, rec.ExpiresMs)
		}
		if l2.MarkMs != s.top(at) {
			t.Errorf("mark of the claim after expiry %d, want the claimer's clock + LeaseFor = %d", l2.MarkMs, s.top(at))
		}
	}
	if rec := MustGet(t, st, 0); rec.Holder != "b" || rec.Token != l2.Token {
		t.Errorf("record after the new claim = %+v, want holder b token %d", rec, l2.Token)
	}
}

// checkTokensIncrease: every claim of a number gets a larger token,
// whether the number was released, expired, or quarantined in between.
func checkTokensIncrease(t *testing.T, s *suite) {
	st := s.adminStore(t)
	nowMs := now()
	var last uint64
	claim := func(i int) *lease.Lease {
		t.Helper()
		l := MustClaim(t, st, s.req(fmt.Sprintf("h%d", i), 3, 3, nowMs))
		if l.Token <= last {
			t.Errorf("claim %d: token %d, want > %d", i, l.Token, last)
		}
		if s.h.ClockExpiry && last != 0 && l.Token != last+1 {
			t.Errorf("claim %d: epoch %d, want %d (+1 per claim)", i, l.Token, last+1)
		}
		last = l.Token
		return l
	}
	for i := range 6 {
		l := claim(i)
		if i%2 == 0 {
			MustRelease(t, st, l, l.StartMs)
		} else {
			nowMs = s.expire(t, st, l, nowMs)
		}
	}
	if err := st.Quarantine(ctxFor(t), 3); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	rec := MustGet(t, st, 3)
	if s.h.ClockExpiry {
		if rec.Token != last+1 {
			t.Errorf("epoch after Quarantine %d, want %d (+1, as the operator's quarantine of a row does)", rec.Token, last+1)
		}
	}
	last = max(last, rec.Token)
	if err := st.Unquarantine(ctxFor(t), 3); err != nil {
		t.Fatalf("Unquarantine: %v", err)
	}
	l := MustClaim(t, st, s.req("after", 3, 3, nowMs))
	if l.Token <= last {
		t.Errorf("claim after unquarantine: token %d, want > %d", l.Token, last)
	}
}

// checkExtendCompares: Extend compares on the token (and, in tables, on the
// holder too); a failed compare is ErrLost and changes nothing.
func checkExtendCompares(t *testing.T, s *suite) {
	st := s.store(t)
	nowMs := now()
	l := MustClaim(t, st, s.req("h", 0, 0, nowMs))
	l = s.mustExtend(t, st, l, s.top(nowMs)+1000)
	bad := map[string]*lease.Lease{}
	wrongToken := *l
	wrongToken.Token += 1000
	bad["another token"] = &wrongToken
	if s.h.ClockExpiry {
		wrongHolder := *l
		wrongHolder.Holder = "someone-else"
		bad["another holder"] = &wrongHolder
	}
	for name, b := range bad {
		if _, err := s.reopen(t, st).Extend(ctxFor(t), b, s.top(nowMs)+5000, s.h.LeaseFor); !errors.Is(err, lease.ErrLost) {
			t.Errorf("Extend with %s: %v, want ErrLost", name, err)
		}
	}
	if rec := MustGet(t, st, 0); rec.MarkMs != l.MarkMs || rec.Token != l.Token || rec.Holder != "h" {
		t.Errorf("record after refused extensions = %+v, want holder h token %d mark %d", rec, l.Token, l.MarkMs)
	}
	s.mustExtend(t, st, l, s.top(nowMs)+2000)
}

// checkExtendOnlyForward: an extension to an earlier mark keeps the later
// one, in the returned lease and in the store, through any Store value.
// The lease is handed from one Store value to the next as the last
// extension returned it, with its renewal value: two Store values renewing
// one claim from the same copy of the lease are a cloned holder
// (checkCloneIsLost).
func checkExtendOnlyForward(t *testing.T, s *suite) {
	st := s.store(t)
	nowMs := now()
	base := s.top(nowMs)
	l := MustClaim(t, st, s.req("h", 0, 0, nowMs))
	l = s.mustExtend(t, st, l, base+5000)
	for _, via := range []struct {
		name string
		st   lease.Store
	}{{"same store", st}, {"another store", s.reopen(t, st)}} {
		stale := *l
		stale.MarkMs = nowMs // a caller passing an old copy of its mark
		got, err := via.st.Extend(ctxFor(t), &stale, base+1000, s.h.LeaseFor)
		if err != nil {
			t.Fatalf("%s: Extend to an earlier mark: %v, want the later mark kept", via.name, err)
		}
		if got.MarkMs != base+5000 {
			t.Errorf("%s: Extend to an earlier mark returned mark %d, want %d", via.name, got.MarkMs, base+5000)
		}
		if rec := MustGet(t, st, 0); rec.MarkMs != base+5000 {
			t.Errorf("%s: stored mark %d, want %d", via.name, rec.MarkMs, base+5000)
		}
		l = got
	}
	if got := s.mustExtend(t, st, l, base+6000); got.MarkMs != base+6000 {
		t.Errorf("Extend forward returned mark %d, want %d", got.MarkMs, base+6000)
	}
}

// checkStaleHolderLost: a holder whose lease lapsed and was claimed by
// another is refused everything with ErrLost, changes nothing, and the new
// holder starts at or above its mark.
func checkStaleHolderLost(t *testing.T, s *suite) {
	st := s.store(t)
	other := s.reopen(t, st)
	nowMs := now()
	a := MustClaim(t, st, s.req("a", 0, 0, nowMs))
	a = s.mustExtend(t, st, a, s.top(nowMs)+1000)
	at := s.expire(t, st, a, nowMs)
	b := MustClaim(t, other, s.req("b", 0, 0, at))
	if b.StartMs < a.MarkMs {
		t.Errorf("new holder starts at %d, below the old holder's mark %d", b.StartMs, a.MarkMs)
	}
	before := MustGet(t, st, 0)
	if _, err := st.Extend(ctxFor(t), a, s.top(at)+99000, s.h.LeaseFor); !errors.Is(err, lease.ErrLost) {
		t.Errorf("stale holder's Extend: %v, want ErrLost", err)
	}
	if err := st.Release(ctxFor(t), a, a.MarkMs); !errors.Is(err, lease.ErrLost) {
		t.Errorf("stale holder's Release: %v, want ErrLost", err)
	}
	after := MustGet(t, st, 0)
	if !s.h.ClockExpiry { // etcd reports the time left on its lease, which moves
		after.ExpiresMs, before.ExpiresMs = 0, 0
	}
	if after != before {
		t.Errorf("record after the stale holder's calls = %+v, want unchanged %+v", after, before)
	}
	s.mustExtend(t, other, b, s.top(at)+1000)
}

// checkRelease: Release frees the number and records the mark, which may
// lower the holder's own reservation but not a mark an earlier holder
// left; a released lease can neither extend nor release again, and a
// non-holder cannot release.
func checkRelease(t *testing.T, s *suite) {
	st := s.store(t)
	nowMs := now()
	base := s.top(nowMs)
	l := MustClaim(t, st, s.req("h", 7, 7, nowMs))
	l = s.mustExtend(t, st, l, base+9000)
	MustRelease(t, st, l, base+3000)
	rec := MustGet(t, st, 7)
	if rec.Held() || rec.MarkMs != base+3000 {
		t.Errorf("record after Release = %+v, want free with mark %d", rec, base+3000)
	}
	if s.h.ClockExpiry && rec.Token != l.Token {
		t.Errorf("epoch after Release %d, want %d (a release keeps the epoch; the next claim adds one)", rec.Token, l.Token)
	}
	if err := st.Release(ctxFor(t), l, base+3000); !errors.Is(err, lease.ErrLost) {
		t.Errorf("second Release: %v, want ErrLost", err)
	}
	if _, err := st.Extend(ctxFor(t), l, base+4000, s.h.LeaseFor); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Extend after Release: %v, want ErrLost", err)
	}
	l2 := MustClaim(t, s.reopen(t, st), s.req("next", 7, 7, nowMs))
	if l2.StartMs != base+3000 {
		t.Errorf("next claim, by a clock behind the released mark, starts at %d, want the mark %d", l2.StartMs, base+3000)
	}
	if s.h.ClockExpiry && l2.MarkMs < l2.StartMs {
		// A table's claim is its first reservation: it cannot end before
		// the lease starts.
		t.Errorf("next claim's mark %d is below its start %d", l2.MarkMs, l2.StartMs)
	}
	forged := *l2
	forged.Token++
	if s.h.ClockExpiry {
		forged.Token = l2.Token
		forged.Holder = "not-the-holder"
	}
	if err := st.Release(ctxFor(t), &forged, base+100000); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Release by a non-holder: %v, want ErrLost", err)
	}
	if rec := MustGet(t, st, 7); rec.Holder != "next" || rec.Token != l2.Token {
		t.Errorf("record after a non-holder's Release = %+v, want holder next token %d", rec, l2.Token)
	}
	// A release below the mark the previous holder left keeps that mark.
	MustRelease(t, st, l2, nowMs+1000)
	if rec := MustGet(t, st, 7); rec.MarkMs != base+3000 {
		t.Errorf("mark after a release below the previous holder's = %d, want %d", rec.MarkMs, base+3000)
	}
}

// checkMarkSurvivesRelease: the mark outlives the holder. A claimer whose
// clock is far behind still starts at or above the released mark, and one
// after a lapsed lease at or above the reservation the dead holder made.
func checkMarkSurvivesRelease(t *testing.T, s *suite) {
	st := s.store(t)
	nowMs := now()
	base := s.top(nowMs)
	l := MustClaim(t, st, s.req("h", 2, 2, nowMs))
	l = s.mustExtend(t, st, l, base+5000)
	MustRelease(t, st, l, base+4000)
	behind := s.req("behind", 2, 2, nowMs-3_600_000)
	behind.MaxAhead = 3 * time.Hour
	l2 := MustClaim(t, s.reopen(t, st), behind)
	if l2.StartMs < base+4000 {
		t.Errorf("claimer an hour behind starts at %d, want ≥ the released mark %d", l2.StartMs, base+4000)
	}
	l2 = s.mustExtend(t, st, l2, base+8000)
	at := s.expire(t, st, l2, nowMs)
	l3 := MustClaim(t, s.reopen(t, st), s.req("third", 2, 2, at))
	if l3.StartMs < base+8000 {
		t.Errorf("claimer after a lapsed lease starts at %d, want ≥ the dead holder's reservation %d", l3.StartMs, base+8000)
	}
}

// checkGetList: records show holder, token, mark and quarantine; a number
// never claimed reads as a zero record; List returns numbers in numeric
// order (1000 after 10, not before 5).
func checkGetList(t *testing.T, s *suite) {
	st := s.adminStore(t)
	nowMs := now()
	if rec := MustGet(t, st, 9); rec.Machine != 9 || rec.Held() || rec.Token != 0 || rec.MarkMs != 0 || rec.Quarantined {
		t.Errorf("Get of a never-claimed number = %+v, want a zero record for machine 9", rec)
	}
	if recs, err := st.List(ctxFor(t)); err != nil || len(recs) != 0 {
		t.Errorf("List of an empty store = %+v, %v; want none", recs, err)
	}
	l := s.mustExtend(t, st, MustClaim(t, st, s.req("h", 5, 5, nowMs)), s.top(nowMs)+700)
	if err := st.Quarantine(ctxFor(t), 6); err != nil {
		t.Fatal(err)
	}
	rec := MustGet(t, st, 5)
	if rec.Machine != 5 || rec.Holder != "h" || rec.Token != l.Token || rec.MarkMs != l.MarkMs || rec.Quarantined {
		t.Errorf("Get(5) = %+v, want holder h token %d mark %d", rec, l.Token, l.MarkMs)
	}
	if s.h.ClockExpiry && rec.ExpiresMs != l.MarkMs {
		t.Errorf("Get(5).ExpiresMs = %d, want the mark %d", rec.ExpiresMs, l.MarkMs)
	}
	for _, n := range []int{1000, 10} {
		MustClaim(t, st, s.req(fmt.Sprint("h", n), n, n, nowMs))
	}
	recs, err := st.List(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[0].Machine != 5 || recs[0].Token != l.Token || recs[0].Holder != "h" ||
		recs[1].Machine != 6 || !recs[1].Quarantined || recs[2].Machine != 10 || recs[3].Machine != 1000 || recs[3].Holder != "h1000" {
		t.Errorf("List = %+v, want 5 held by h, 6 quarantined, 10 and 1000 held by h10 and h1000", recs)
	}
}

// checkQuarantine: quarantine defeats both claim and renewal (ErrQuarantined)
// and is idempotent; unquarantine makes the number claimable again, with a
// mark no lower than what the holder before could have issued.
func checkQuarantine(t *testing.T, s *suite) {
	st := s.adminStore(t)
	nowMs := now()
	base := s.top(nowMs)
	l := MustClaim(t, st, s.req("h", 4, 4, nowMs))
	l = s.mustExtend(t, st, l, base+1000)
	pre := l.MarkMs
	if err := st.Quarantine(ctxFor(t), 4); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	rec := MustGet(t, st, 4)
	if err := st.Quarantine(ctxFor(t), 4); err != nil {
		t.Errorf("second Quarantine: %v, want nil (idempotent)", err)
	}
	if _, err := st.Extend(ctxFor(t), l, base+2000, s.h.LeaseFor); !errors.Is(err, lease.ErrQuarantined) {
		t.Errorf("Extend of a quarantined number: %v, want ErrQuarantined", err)
	}
	if !rec.Quarantined || rec.MarkMs != pre {
		t.Errorf("record = %+v, want quarantined with the holder's mark %d", rec, pre)
	}
	if s.h.ClockExpiry && (rec.Holder != lease.QuarantineHolder || rec.ExpiresMs != lease.QuarantineExpiryMs || rec.Token != l.Token+1) {
		t.Errorf("record = %+v, want holder %q, expiry %d (2100-01-01) and epoch %d (+1), as the operator's quarantine of a row writes",
			rec, lease.QuarantineHolder, lease.QuarantineExpiryMs, l.Token+1)
	}
	claimers := []int64{nowMs}
	if s.h.ClockExpiry {
		// Clocks in 2099 and past 2100: the holder name, not the expiry,
		// keeps a quarantined row from being claimed.
		claimers = append(claimers, lease.QuarantineExpiryMs-1, lease.QuarantineExpiryMs+1)
	}
	for _, at := range claimers {
		r := s.req("other", 4, 4, at)
		r.MaxAhead = time.Duration(1 << 62)
		if _, err := st.Claim(ctxFor(t), r); !errors.Is(err, lease.ErrNoFreeNumber) {
			t.Errorf("Claim of a quarantined number at %d: %v, want ErrNoFreeNumber", at, err)
		}
	}
	// The old holder releases (through another Store value); a store may
	// refuse, as the quarantine took the number from it.
	relErr := s.adminReopen(t, st).Release(ctxFor(t), l, base+800)
	want := pre
	switch {
	case relErr == nil:
		want = base + 800
	case errors.Is(relErr, lease.ErrLost), errors.Is(relErr, lease.ErrQuarantined):
	default:
		t.Errorf("Release of a quarantined number: %v, want nil, ErrLost or ErrQuarantined", relErr)
	}
	if _, err := st.Claim(ctxFor(t), s.req("other", 4, 4, nowMs)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Errorf("Claim of a quarantined number after its release: %v, want ErrNoFreeNumber", err)
	}
	// A number never claimed can be quarantined too.
	if err := st.Quarantine(ctxFor(t), 5); err != nil {
		t.Fatalf("Quarantine of a free number: %v", err)
	}
	if _, err := st.Claim(ctxFor(t), s.req("other", 5, 5, nowMs)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Errorf("Claim of a quarantined, never-claimed number: %v, want ErrNoFreeNumber", err)
	}
	if err := st.Unquarantine(ctxFor(t), 4); err != nil {
		t.Fatalf("Unquarantine: %v", err)
	}
	if err := st.Unquarantine(ctxFor(t), 4); !errors.Is(err, lease.ErrNotHeld) {
		t.Errorf("Unquarantine of a number not quarantined: %v, want ErrNotHeld", err)
	}
	if rec := MustGet(t, st, 4); rec.Quarantined || rec.MarkMs < want {
		t.Errorf("record after Unquarantine = %+v, want not quarantined with mark ≥ %d", rec, want)
	}
	l2 := MustClaim(t, st, s.req("other", 4, 4, nowMs))
	if l2.StartMs < want {
		t.Errorf("claim after unquarantine starts at %d, want ≥ %d (what the holder before the quarantine could have issued)", l2.StartMs, want)
	}
	if l2.Token <= rec.Token {
		t.Errorf("claim after unquarantine: token %d, want > %d", l2.Token, rec.Token)
	}
	if err := st.Unquarantine(ctxFor(t), 5); err != nil {
		t.Errorf("Unquarantine of 5: %v", err)
	}
	MustClaim(t, st, s.req("other", 5, 5, nowMs))
}

// checkRanges: claims stay in their range, a full range fails with
// ErrNoFreeNumber without touching numbers outside it, and Exclude is kept.
func checkRanges(t *testing.T, s *suite) {
	st := s.store(t)
	nowMs := now()
	var got []int
	var leases []*lease.Lease
	for i := range 3 {
		l := MustClaim(t, st, s.req(fmt.Sprintf("h%d", i), 30, 32, nowMs))
		got = append(got, l.Machine)
		leases = append(leases, l)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{30, 31, 32}) {
		t.Errorf("three claims in 30-32 got %v, want each of 30, 31, 32 once", got)
	}
	if _, err := st.Claim(ctxFor(t), s.req("h3", 30, 32, nowMs)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Errorf("Claim in a full range: %v, want ErrNoFreeNumber", err)
	}
	for _, n := range []int{29, 33} {
		if l := MustClaim(t, st, s.req("outside", n, n, nowMs)); l.Machine != n {
			t.Errorf("claim of %d-%d got %d", n, n, l.Machine)
		}
	}
	freed := leases[1]
	MustRelease(t, st, freed, nowMs)
	r := s.req("h4", 30, 32, nowMs)
	r.Exclude = []int{freed.Machine}
	if _, err := st.Claim(ctxFor(t), r); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Errorf("Claim with the only free number excluded: %v, want ErrNoFreeNumber", err)
	}
	r.Exclude = nil
	if l := MustClaim(t, st, r); l.Machine != freed.Machine {
		t.Errorf("claim got %d, want the freed %d", l.Machine, freed.Machine)
	}
}

// checkMaxAhead: a number whose mark is further ahead of the claimer's
// clock than MaxAhead is passed over; within it, the claim starts at the
// mark.
func checkMaxAhead(t *testing.T, s *suite) {
	st := s.adminStore(t)
	nowMs := now()
	far := nowMs + 3_600_000
	if n, err := st.RaiseMarks(ctxFor(t), lease.Range{Lo: 20, Hi: 20}, far); err != nil || n != 1 {
		t.Fatalf("RaiseMarks = %d, %v; want 1, nil", n, err)
	}
	r := s.req("h", 20, 21, nowMs)
	r.MaxAhead = 2 * time.Second
	for range 4 { // the start is random; 20 must never be taken
		l := MustClaim(t, st, r)
		if l.Machine != 21 {
			t.Fatalf("claimed %d, want 21 (20's mark is an hour ahead)", l.Machine)
		}
		MustRelease(t, st, l, nowMs)
	}
	r.Range = lease.Range{Lo: 20, Hi: 20}
	_, err := st.Claim(ctxFor(t), r)
	if !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Errorf("Claim with only a far-ahead number: %v, want ErrNoFreeNumber", err)
	}
	// The refusal says when the number becomes claimable, and does not
	// send the operator to widen a range every number of which may carry
	// a raised mark (raise-marks over 0-1023, a restore's floor).
	if when := lease.FormatMs(far - r.MaxAhead.Milliseconds()); err == nil || !strings.Contains(err.Error(), "claimable at "+when) ||
		strings.Contains(err.Error(), "; widen the range") {
		t.Errorf("Claim with only a far-ahead number: %v; want it to say the number is claimable at %s, and no advice to widen the range", err, when)
	}
	r.MaxAhead = 2 * time.Hour
	if l := MustClaim(t, st, r); l.StartMs != far {
		t.Errorf("claim within MaxAhead starts at %d, want the mark %d", l.StartMs, far)
	}
}

// checkRaiseMarks: RaiseMarks raises lower and missing marks only, fences
// every holder in the range (the operator's step after a restore: a claim
// that survived in the restored store must not extend again), and the next
// claim of every number starts at or above the raised mark.
func checkRaiseMarks(t *testing.T, s *suite) {
	st := s.adminStore(t)
	nowMs := now()
	base := s.top(nowMs)
	held := s.mustExtend(t, st, MustClaim(t, st, s.req("h", 1, 1, nowMs)), base+1000)
	high := s.mustExtend(t, st, MustClaim(t, st, s.req("h", 2, 2, nowMs)), base+99000)
	MustRelease(t, st, high, base+99000)
	raised := base + 50000
	n, err := st.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 3}, raised)
	if err != nil || n != 3 {
		t.Fatalf("RaiseMarks(0-3) = %d, %v; want 3 (0, 1 and 3; 2 is higher), nil", n, err)
	}
	for m, want := range map[int]int64{0: raised, 1: raised, 2: base + 99000, 3: raised} {
		if rec := MustGet(t, st, m); rec.MarkMs != want {
			t.Errorf("machine %d mark %d, want %d", m, rec.MarkMs, want)
		}
	}
	if n, err := st.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 3}, raised); err != nil || n != 0 {
		t.Errorf("RaiseMarks again = %d, %v; want 0, nil", n, err)
	}
	for name, via := range map[string]lease.Admin{"same store": st, "another store": s.adminReopen(t, st)} {
		if _, err := via.Extend(ctxFor(t), held, base+2000, s.h.LeaseFor); !errors.Is(err, lease.ErrLost) {
			t.Errorf("%s: Extend of a lease held across RaiseMarks = %v, want ErrLost (RaiseMarks fences every holder)", name, err)
		}
	}
	if err := st.Release(ctxFor(t), held, base+1500); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Release of a lease held across RaiseMarks = %v, want ErrLost", err)
	}
	if rec := MustGet(t, st, 1); rec.Held() {
		t.Errorf("record of a number held across RaiseMarks = %+v, want no holder", rec)
	}
	next := MustClaim(t, st, s.req("next", 1, 1, nowMs))
	if next.StartMs < raised {
		t.Errorf("claim of a number held across RaiseMarks starts at %d, want ≥ %d", next.StartMs, raised)
	}
	// The next holder's release cannot take the mark below the raised one.
	MustRelease(t, st, next, nowMs)
	if rec := MustGet(t, st, 1); rec.MarkMs < raised {
		t.Errorf("mark after a release below the raised mark = %d, want ≥ %d", rec.MarkMs, raised)
	}
	if l := MustClaim(t, st, s.req("next", 0, 0, nowMs)); l.StartMs < raised {
		t.Errorf("claim of a raised, never-claimed number starts at %d, want ≥ %d", l.StartMs, raised)
	}
}

// checkRaiseMarksEveryNumber: RaiseMarks reaches every kind of number in its
// range, each counted as changed: a held one, a released one, a quarantined
// one (it stays quarantined, and keeps the raised mark once unquarantined),
// one never claimed, and one whose holder's mark is already above the raised
// mark — that holder is fenced too, and its higher mark kept.
func checkRaiseMarksEveryNumber(t *testing.T, s *suite) {
	st := s.adminStore(t)
	nowMs := now()
	base := s.top(nowMs)
	held := MustClaim(t, st, s.req("a", 0, 0, nowMs))
	MustRelease(t, st, MustClaim(t, st, s.req("b", 1, 1, nowMs)), nowMs+10)
	if err := st.Quarantine(ctxFor(t), 2); err != nil {
		t.Fatal(err)
	}
	high := s.mustExtend(t, st, MustClaim(t, st, s.req("c", 3, 3, nowMs)), base+999_000)
	m := base + 100_000
	n, err := st.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 4}, m)
	if err != nil || n != 5 {
		t.Fatalf("RaiseMarks(0-4) = %d, %v; want 5 (four marks raised, and 3's holder fenced under its higher mark), nil", n, err)
	}
	for n := range 5 {
		rec := MustGet(t, st, n)
		if rec.MarkMs < m {
			t.Errorf("machine %d after RaiseMarks: %+v, mark below %d", n, rec, m)
		}
		if rec.Held() && !rec.Quarantined {
			t.Errorf("machine %d after RaiseMarks: %+v, still held", n, rec)
		}
		if rec.Quarantined != (n == 2) {
			t.Errorf("machine %d after RaiseMarks: %+v, want only 2 quarantined", n, rec)
		}
	}
	if rec := MustGet(t, st, 3); rec.MarkMs != base+999_000 || (s.h.ClockExpiry && rec.Token != high.Token+1) {
		t.Errorf("machine 3 after RaiseMarks: %+v, want its higher mark %d kept (tables: and epoch %d)", rec, base+999_000, high.Token+1)
	}
	for _, l := range []*lease.Lease{held, high} {
		for name, via := range map[string]lease.Admin{"same store": st, "another store": s.adminReopen(t, st)} {
			if _, err := via.Extend(ctxFor(t), l, base+2_000_000, s.h.LeaseFor); !errors.Is(err, lease.ErrLost) {
				t.Errorf("%s: Extend of machine %d held across RaiseMarks: %v, want ErrLost", name, l.Machine, err)
			}
			if err := via.Release(ctxFor(t), l, nowMs+5); !errors.Is(err, lease.ErrLost) {
				t.Errorf("%s: Release of machine %d held across RaiseMarks: %v, want ErrLost", name, l.Machine, err)
			}
		}
	}
	if l := MustClaim(t, st, s.req("d", 0, 0, nowMs)); l.StartMs < m || (s.h.ClockExpiry && l.Token != held.Token+2) {
		t.Errorf("claim after RaiseMarks %+v, want a start ≥ %d (tables: and epoch %d, one for the fence and one for the claim)", l, m, held.Token+2)
	}
	if err := st.Unquarantine(ctxFor(t), 2); err != nil {
		t.Fatal(err)
	}
	if rec := MustGet(t, st, 2); rec.Quarantined || rec.MarkMs != m {
		t.Errorf("machine 2 unquarantined after RaiseMarks: %+v, want free with the raised mark %d", rec, m)
	}
	if n, err := st.RaiseMarks(ctxFor(t), lease.Range{Lo: 1, Hi: 4}, m); err != nil || n != 0 {
		t.Errorf("RaiseMarks(1-4) again = %d, %v; want 0, nil: nothing held, nothing lower", n, err)
	}
}

// checkSharedHolderRace: claimers that share one holder string — two
// keepers of one process, or two processes given one --holder — race for
// one number at the same instant. Exactly one gets it; the others must not
// mistake the winner's claim for their own (a store may recognise its own
// claim only by something unique to the attempt, never by the holder).
func checkSharedHolderRace(t *testing.T, s *suite) {
	const claimers = 8
	for round := range 3 {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			nowMs := now()
			_, errs := s.race(t, s.store(t), claimers, func(int) lease.ClaimRequest { return s.req("shared", 7, 7, nowMs) })
			won := 0
			for i := range claimers {
				switch {
				case errs[i] == nil:
					won++
				case errors.Is(errs[i], lease.ErrNoFreeNumber):
				default:
					t.Errorf("claimer %d: %v, want a lease or ErrNoFreeNumber", i, errs[i])
				}
			}
			if won != 1 {
				t.Errorf("%d claimers sharing one holder string got machine 7 at once, want exactly 1", won)
			}
		})
	}
	t.Run("after the first claim", func(t *testing.T) {
		st := s.store(t)
		nowMs := now()
		first := MustClaim(t, st, s.req("shared", 3, 3, nowMs))
		l, err := s.reopen(t, st).Claim(ctxFor(t), s.req("shared", 3, 3, nowMs))
		if !errors.Is(err, lease.ErrNoFreeNumber) {
			t.Fatalf("second claim with the same holder and clock = %v, %v; want ErrNoFreeNumber, not a copy of %v", l, err, first)
		}
	})
}

// checkExtendComparesClaim: a lease with the right machine, holder and
// token but another claim (Lease.Claim) is not the one the store holds: a
// token can repeat once a store went back in time and a holder name can be
// shared, so Extend and Release refuse it with ErrLost, through the store
// that claimed it and through another; the real lease still extends.
func checkExtendComparesClaim(t *testing.T, s *suite) {
	st := s.store(t)
	nowMs := now()
	l := s.mustExtend(t, st, MustClaim(t, st, s.req("h", 4, 4, nowMs)), s.top(nowMs)+1000)
	if l.Claim == "" {
		t.Fatalf("claimed lease %v has no Claim", l)
	}
	if rec := MustGet(t, st, 4); rec.Claim != l.Claim {
		t.Errorf("Get(4).Claim = %q, want the lease's %q", rec.Claim, l.Claim)
	}
	forged := *l
	forged.Claim = "another-claim"
	for name, via := range map[string]lease.Store{"same store": st, "another store": s.reopen(t, st)} {
		if _, err := via.Extend(ctxFor(t), &forged, s.top(nowMs)+2000, s.h.LeaseFor); !errors.Is(err, lease.ErrLost) {
			t.Errorf("%s: Extend of a lease with another claim = %v, want ErrLost", name, err)
		}
		if err := via.Release(ctxFor(t), &forged, nowMs); !errors.Is(err, lease.ErrLost) {
			t.Errorf("%s: Release of a lease with another claim = %v, want ErrLost", name, err)
		}
	}
	s.mustExtend(t, st, l, s.top(nowMs)+3000)
}

// checkSchedule: the fleet schedule kept beside the leases. Never set, it
// is "v1" at version 0 and only default-schedule claims succeed; set, it is
// seen by every Store value, claims with another schedule are refused, and
// a lease claimed under the old one renews only up to the first instant at
// which the two schedules differ.
// Writes are compare-and-set on the version.
func checkSchedule(t *testing.T, s *suite) {
	const next = "v1,v2@2036-01-01T00:00:00Z"
	st := s.adminStore(t)
	other := s.adminReopen(t, st)
	fs, err := st.FleetSchedule(ctxFor(t))
	if err != nil || fs.Text != lease.DefaultFleetSchedule || fs.Version != 0 {
		t.Fatalf("FleetSchedule of a new store = %+v, %v; want v1 at version 0", fs, err)
	}
	nowMs := now()
	old := MustClaim(t, st, s.req("old", 0, 0, nowMs))
	if old.Schedule != lease.DefaultFleetSchedule {
		t.Errorf("lease claimed with the default schedule carries %q, want %q", old.Schedule, lease.DefaultFleetSchedule)
	}
	old = s.mustExtend(t, st, old, s.top(nowMs)+1000)
	r := s.req("new", 1, 1, nowMs)
	r.Schedule = next
	if _, err := st.Claim(ctxFor(t), r); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("claim with %q while the fleet has v1: %v, want ErrSchedule", next, err)
	}
	set, err := other.SetFleetSchedule(ctxFor(t), 0, next)
	if err != nil || set.Text != next || set.Version != 1 {
		t.Fatalf("SetFleetSchedule(0, %q) = %+v, %v; want it at version 1", next, set, err)
	}
	if _, err := st.SetFleetSchedule(ctxFor(t), 0, "v1"); !errors.Is(err, lease.ErrConflict) {
		t.Errorf("SetFleetSchedule with a stale version: %v, want ErrConflict", err)
	}
	// Claims compare canonical text: a store keeps the canonical form of
	// what it is given, and refuses what does not parse, which would stop
	// every claim and extension.
	t.Run("canonical", func(t *testing.T) {
		if set, err := s.adminStore(t).SetFleetSchedule(ctxFor(t), 0, "v1,v2@2036-01-01T00:00:00+00:00"); err != nil || set.Text != next {
			t.Errorf("SetFleetSchedule of %q spelled with +00:00 = %+v, %v; want %q stored", next, set, err, next)
		}
	})
	t.Run("unparsable", func(t *testing.T) {
		if _, err := s.adminStore(t).SetFleetSchedule(ctxFor(t), 0, "v3"); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("SetFleetSchedule(\"v3\") = %v, want ErrInvalid", err)
		}
	})
	if fs, err := st.FleetSchedule(ctxFor(t)); err != nil || fs != set {
		t.Errorf("FleetSchedule after the set = %+v, %v; want %+v", fs, err, set)
	}
	// The old and the new schedule agree until the cutover: a holder on
	// the old one renews until its mark would reach it, so the fleet can
	// restart on the new one in the meantime, and stops there.
	old = s.mustExtend(t, st, old, s.top(nowMs)+2000)
	cutover := time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	if _, err := st.Extend(ctxFor(t), old, cutover+1, s.h.LeaseFor); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("Extend past the cutover of a lease claimed under the old schedule: %v, want ErrSchedule", err)
	}
	if _, err := other.Extend(ctxFor(t), old, cutover+1, s.h.LeaseFor); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("Extend past the cutover through another store value: %v, want ErrSchedule", err)
	}
	l := MustClaim(t, st, r)
	if l.Schedule != next {
		t.Errorf("lease claimed with %q carries %q", next, l.Schedule)
	}
	s.mustExtend(t, st, l, s.top(nowMs)+1000)
	if _, err := st.Claim(ctxFor(t), s.req("default", 2, 2, nowMs)); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("claim with the default schedule after the fleet moved on: %v, want ErrSchedule", err)
	}
}

// checkInvalid: requests outside the store's limits fail with ErrInvalid.
func checkInvalid(t *testing.T, s *suite) {
	st := s.adminStore(t)
	nowMs := now()
	with := func(f func(*lease.ClaimRequest)) lease.ClaimRequest {
		r := s.req("h", 0, 1, nowMs)
		f(&r)
		return r
	}
	for name, r := range map[string]lease.ClaimRequest{
		"no holder":             s.req("", 0, 1, nowMs),
		"the quarantine holder": s.req(lease.QuarantineHolder, 0, 1, nowMs),
		"negative range":        s.req("h", -1, 1, nowMs),
		"empty range":           s.req("h", 2, 1, nowMs),
		"no clock":              s.req("h", 0, 1, 0),
		"negative clock":        s.req("h", 0, 1, -1),
		"no lease time":         with(func(r *lease.ClaimRequest) { r.LeaseFor = 0 }),
		"negative lease time":   with(func(r *lease.ClaimRequest) { r.LeaseFor = -time.Second }),
		"negative MaxAhead":     with(func(r *lease.ClaimRequest) { r.MaxAhead = -time.Second }),
		"unparsable schedule":   with(func(r *lease.ClaimRequest) { r.Schedule = "v3" }),
	} {
		if _, err := st.Claim(ctxFor(t), r); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%s: Claim = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := st.Get(ctxFor(t), -1); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Get(-1) = %v, want ErrInvalid", err)
	}
	if err := st.Quarantine(ctxFor(t), -1); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Quarantine(-1) = %v, want ErrInvalid", err)
	}
	l := MustClaim(t, st, s.req("h", 0, 0, nowMs))
	wrong := *l
	wrong.Region++
	if _, err := st.Extend(ctxFor(t), &wrong, s.top(nowMs)+1000, s.h.LeaseFor); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Extend of another region's lease = %v, want ErrInvalid", err)
	}
}
