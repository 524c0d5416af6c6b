package leasetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/snowfence/snowfence/lease"
)

// MustHistory reads the journal of machine, failing the test on an error.
func MustHistory(t testing.TB, st lease.Journal, machine int) []lease.JournalEntry {
	t.Helper()
	h, err := st.History(ctxFor(t), machine)
	if err != nil {
		t.Fatalf("History(%d): %v", machine, err)
	}
	return h
}

// MustIntervals reads the journal and the record of machine and returns
// their intervals, failing the test if any two overlap.
func MustIntervals(t testing.TB, st lease.Admin, machine int) []lease.Interval {
	t.Helper()
	ivs := lease.Intervals(MustHistory(t, st, machine), MustGet(t, st, machine))
	if err := lease.CheckIntervals(ivs); err != nil {
		t.Fatal(err)
	}
	return ivs
}

// entryOf checks that e is the journal entry of claim l made with r.
func entryOf(t *testing.T, what string, e lease.JournalEntry, l *lease.Lease, r lease.ClaimRequest, prevMark int64) {
	t.Helper()
	want := lease.JournalEntry{Machine: l.Machine, Region: l.Region, Token: l.Token, Claim: l.Claim, Holder: l.Holder,
		ClaimedMs: r.NowMs, PrevMarkMs: prevMark, StartMs: l.StartMs}
	got := e
	got.End, got.EndMs, got.EndedMs = "", 0, 0
	if got != want {
		t.Errorf("%s: journal entry %+v, want %+v", what, got, want)
	}
}

// checkJournal: every claim writes one entry (holder, token, claim, the
// claimer's clock, the mark it read, its start); renewals write nothing;
// a release records the mark it wrote, a quarantine and a raise end the
// holding, and a lease that ran out shows as lost with the next claimer's
// mark as its end. The intervals never overlap, and Who answers each with
// the holder that held it.
func checkJournal(t *testing.T, s *suite) {
	st := s.adminStore(t)
	const m = 6
	if h := MustHistory(t, st, m); len(h) != 0 {
		t.Fatalf("History of a number never claimed = %+v, want none", h)
	}
	nowMs := now()
	base := s.top(nowMs)

	// a: claimed, renewed twice, released.
	ra := s.req("journal-a", m, m, nowMs)
	a := MustClaim(t, st, ra)
	h := MustHistory(t, st, m)
	if len(h) != 1 {
		t.Fatalf("History after one claim = %+v, want one entry", h)
	}
	entryOf(t, "first claim", h[0], a, ra, 0)
	a = s.mustExtend(t, st, a, base+1000)
	a = s.mustExtend(t, st, a, base+2000)
	if h2 := MustHistory(t, st, m); len(h2) != 1 || h2[0] != h[0] {
		t.Errorf("History after two renewals = %+v, want the claim's entry unchanged %+v (renewals write nothing to the journal)", h2, h[0])
	}
	ivs := MustIntervals(t, st, m)
	if ivs[0].State != lease.StateHolding || ivs[0].UntilMs != a.MarkMs {
		t.Errorf("interval of the holder = %+v, want holding until its mark %d", ivs[0], a.MarkMs)
	}
	MustRelease(t, st, a, base+1500)
	h = MustHistory(t, st, m)
	if len(h) != 1 || h[0].End != lease.EndReleased || h[0].EndMs != base+1500 {
		t.Fatalf("History after the release = %+v, want the entry ended %q at %d", h, lease.EndReleased, base+1500)
	}

	// b: claims above a's mark, renewed, then its lease runs out and c
	// takes the number over.
	rb := s.req("journal-b", m, m, nowMs)
	b := MustClaim(t, st, rb)
	entryOf(t, "second claim", MustHistory(t, st, m)[1], b, rb, base+1500)
	b = s.mustExtend(t, st, b, base+3000)
	at := s.expire(t, st, b, nowMs)
	rc := s.req("journal-c", m, m, at)
	c := MustClaim(t, st, rc)
	h = MustHistory(t, st, m)
	if len(h) != 3 {
		t.Fatalf("History after three claims = %+v, want three entries", h)
	}
	entryOf(t, "claim over a lapsed lease", h[2], c, rc, base+3000)
	ivs = MustIntervals(t, st, m)
	if ivs[1].State != lease.StateLost || ivs[1].FromMs != b.StartMs || ivs[1].UntilMs != base+3000 {
		t.Errorf("interval of the lapsed holder = %+v, want lost, %d–%d", ivs[1], b.StartMs, base+3000)
	}

	// c is fenced by a raise of the marks; d claims above it; d is
	// quarantined.
	c = s.mustExtend(t, st, c, base+4000)
	raised := base + 60000
	if n, err := st.RaiseMarks(ctxFor(t), lease.Range{Lo: m, Hi: m}, raised); err != nil || n != 1 {
		t.Fatalf("RaiseMarks = %d, %v; want 1, nil", n, err)
	}
	rd := s.req("journal-d", m, m, at)
	d := MustClaim(t, st, rd)
	d = s.mustExtend(t, st, d, raised+1000)
	if err := st.Quarantine(ctxFor(t), m); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	h = MustHistory(t, st, m)
	if len(h) != 4 {
		t.Fatalf("History after four claims = %+v, want four entries", h)
	}
	if h[2].End != lease.EndRaised || h[2].EndMs != c.MarkMs {
		t.Errorf("entry of the holder fenced by RaiseMarks = %+v, want ended %q at its mark %d", h[2], lease.EndRaised, c.MarkMs)
	}
	entryOf(t, "claim after a raise", h[3], d, rd, raised)
	if h[3].End != lease.EndQuarantined {
		t.Errorf("entry of the quarantined holder = %+v, want ended %q", h[3], lease.EndQuarantined)
	}
	ivs = MustIntervals(t, st, m)
	if last := ivs[3]; last.State != lease.EndQuarantined || last.UntilMs != d.MarkMs {
		t.Errorf("interval of the quarantined holder = %+v, want quarantined until its mark %d", last, d.MarkMs)
	}

	// Who: one answer inside every interval, none in the raise's gap.
	for _, probe := range []struct {
		ms    int64
		token uint64
	}{
		{a.StartMs, a.Token}, {base + 1499, a.Token},
		{b.StartMs, b.Token}, {base + 2999, b.Token},
		{c.StartMs, c.Token}, {c.MarkMs - 1, c.Token},
		{d.StartMs, d.Token}, {d.MarkMs - 1, d.Token},
	} {
		iv, err := lease.Who(ivs, probe.ms)
		if err != nil || iv.Token != probe.token {
			t.Errorf("Who(%d) = token %d, %v; want token %d", probe.ms, iv.Token, err, probe.token)
		}
	}
	for _, ms := range []int64{c.MarkMs, raised - 1, d.MarkMs} {
		if iv, err := lease.Who(ivs, ms); err == nil {
			t.Errorf("Who(%d) = %+v, want ErrNotInJournal (no holder issued it)", ms, iv)
		}
	}
	// The quarantined holder's release (a store may refuse it) leaves the
	// holding ended by the quarantine, at the same mark.
	_ = s.adminReopen(t, st).Release(ctxFor(t), d, d.MarkMs)
	ivs = MustIntervals(t, st, m)
	if last := ivs[3]; last.State != lease.EndQuarantined || last.UntilMs != d.MarkMs {
		t.Errorf("interval of the quarantined holder after its release = %+v, want still quarantined until %d", last, d.MarkMs)
	}
	// A raise over the quarantined number (the runbook's step after a
	// restore) does not stretch the quarantined holder's interval.
	if _, err := st.RaiseMarks(ctxFor(t), lease.Range{Lo: m, Hi: m}, raised+120_000); err != nil {
		t.Fatalf("RaiseMarks over a quarantined number: %v", err)
	}
	ivs = MustIntervals(t, st, m)
	if last := ivs[3]; last.UntilMs != d.MarkMs {
		t.Errorf("interval of the quarantined holder after a raise = %+v, want it to end at its mark %d still", last, d.MarkMs)
	}
	if iv, err := lease.Who(ivs, raised+60_000); err == nil {
		t.Errorf("Who in the raise's gap over a quarantined number = %+v, want ErrNotInJournal", iv)
	}
}

// checkJournalRetention: a number claimed more than JournalRetention times
// keeps the newest JournalRetention entries, in claim order.
func checkJournalRetention(t *testing.T, s *suite) {
	st := s.adminStore(t)
	const m = 7
	nowMs := now()
	var tokens []uint64
	for i := range lease.JournalRetention + 3 {
		l := MustClaim(t, st, s.req(fmt.Sprintf("retention-%d", i), m, m, nowMs))
		tokens = append(tokens, l.Token)
		MustRelease(t, st, l, nowMs+int64(i)+1)
	}
	h := MustHistory(t, st, m)
	if len(h) != lease.JournalRetention {
		t.Fatalf("History after %d claims has %d entries, want %d", len(tokens), len(h), lease.JournalRetention)
	}
	for i, e := range h {
		if want := tokens[len(tokens)-lease.JournalRetention+i]; e.Token != want {
			t.Fatalf("History[%d].Token = %d, want %d (the newest %d claims, oldest first)", i, e.Token, want, lease.JournalRetention)
		}
	}
	MustIntervals(t, st, m)
}

// checkJournalRace: claimers racing for a few numbers, each claim renewed
// and released or left to lapse: every claim that succeeded has exactly one
// entry, no entry names a claim that failed, and the intervals of every
// number are disjoint.
func checkJournalRace(t *testing.T, s *suite) {
	st := s.adminStore(t)
	const lo, hi, rounds = 10, 12, 6
	nowMs := now()
	won := map[int]map[uint64]string{}
	for round := range rounds {
		ls, _ := s.race(t, st, 6, func(i int) lease.ClaimRequest {
			return s.req(fmt.Sprintf("racer-%d-%d", round, i), lo, hi, nowMs+int64(round)*100_000)
		})
		for _, l := range ls {
			if l == nil {
				continue
			}
			if won[l.Machine] == nil {
				won[l.Machine] = map[uint64]string{}
			}
			won[l.Machine][l.Token] = l.Claim
			l = s.mustExtend(t, st, l, l.StartMs+500)
			if round%2 == 0 {
				MustRelease(t, st, l, l.MarkMs)
			} else {
				s.expire(t, st, l, nowMs)
			}
		}
	}
	for n := lo; n <= hi; n++ {
		seen := map[uint64]bool{}
		for _, iv := range MustIntervals(t, st, n) {
			claim, ok := won[n][iv.Token]
			if !ok || claim != iv.Claim || seen[iv.Token] {
				t.Errorf("machine %d: journal entry %+v is not one successful claim's (or appears twice)", n, iv.JournalEntry)
			}
			seen[iv.Token] = true
		}
		if len(seen) != len(won[n]) {
			t.Errorf("machine %d: %d claims succeeded, the journal has %d", n, len(won[n]), len(seen))
		}
	}
}

// checkJournalUnrenewed: a claim whose holder died before its first
// renewal still has its entry, with an empty interval (it issued nothing),
// and the next claim's interval starts at or above everything before it.
func checkJournalUnrenewed(t *testing.T, s *suite) {
	st := s.adminStore(t)
	const m = 8
	nowMs := now()
	r := s.req("dies-before-renewing", m, m, nowMs)
	l := MustClaim(t, st, r)
	at := s.expire(t, st, l, nowMs)
	next := MustClaim(t, st, s.req("next", m, m, at))
	ivs := MustIntervals(t, st, m)
	if len(ivs) != 2 || ivs[0].Token != l.Token || ivs[0].State != lease.StateLost || ivs[1].Token != next.Token {
		t.Fatalf("intervals = %+v, want the unrenewed claim (lost) and the next", ivs)
	}
	if ivs[0].UntilMs > ivs[0].FromMs && ivs[0].UntilMs > next.StartMs {
		t.Errorf("unrenewed claim's interval %d–%d reaches past the next claim's start %d", ivs[0].FromMs, ivs[0].UntilMs, next.StartMs)
	}
}

// checkJournalQuarantinedRelease: a holder quarantined while it held a
// reservation releases below it, at the end of what it issued (its keeper
// stops and gives the number up). The store may keep either mark for the
// next holder, the release's or the reservation, but the journal must
// agree with it: after Unquarantine the next claim starts at or above the
// end of the quarantined holder's interval, and the intervals stay
// disjoint. A store that lowered the kept mark to the release's and left
// the entry ending at the reservation fails here.
func checkJournalQuarantinedRelease(t *testing.T, s *suite) {
	st := s.adminStore(t)
	const m = 9
	nowMs := now()
	base := s.top(nowMs)
	a := MustClaim(t, st, s.req("quarantined-then-releases", m, m, nowMs))
	a = s.mustExtend(t, st, a, base+5000)
	if err := st.Quarantine(ctxFor(t), m); err != nil {
		t.Fatalf("Quarantine: %v", err)
	}
	stopped := base + 2000
	if err := st.Release(ctxFor(t), a, stopped); err != nil && !errors.Is(err, lease.ErrQuarantined) && !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Release of the quarantined holder: %v", err)
	}
	if err := st.Unquarantine(ctxFor(t), m); err != nil {
		t.Fatalf("Unquarantine: %v", err)
	}
	b := MustClaim(t, st, s.req("after-the-quarantine", m, m, nowMs))
	if b.StartMs < stopped {
		t.Fatalf("claim after the quarantine starts at %d, below %d where the quarantined holder stopped", b.StartMs, stopped)
	}
	ivs := MustIntervals(t, st, m)
	if len(ivs) != 2 || ivs[0].Token != a.Token || ivs[1].Token != b.Token {
		t.Fatalf("intervals = %+v, want the quarantined holder's and the next", ivs)
	}
	if q := ivs[0]; q.State != lease.EndQuarantined || q.UntilMs < stopped || q.UntilMs > a.MarkMs || q.UntilMs > b.StartMs {
		t.Errorf("quarantined holder's interval = %+v; want quarantined, ending between %d (where it stopped) and its mark %d, at or below the next start %d",
			q, stopped, a.MarkMs, b.StartMs)
	}
}
