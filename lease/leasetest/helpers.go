package leasetest

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// callTimeout bounds every store call the suite makes.
const callTimeout = 30 * time.Second

// suite carries the harness into the checks.
type suite struct{ h Harness }

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

func (s *suite) store(t *testing.T) lease.Store { return s.h.New(t) }

func (s *suite) reopen(t *testing.T, st lease.Store) lease.Store {
	if s.h.Reopen == nil {
		return st
	}
	return s.h.Reopen(t, st)
}

// now is the claimer's clock for a check: the real wall clock, so that
// server-side expiry (etcd) and the records' expiry times agree with it.
func now() int64 { return time.Now().UnixMilli() }

// top is a mark above any a claim at nowMs reserves by itself (a table
// store's claim writes nowMs + LeaseFor), so Extend to it moves forward.
func (s *suite) top(nowMs int64) int64 { return nowMs + s.h.LeaseFor.Milliseconds() }

func (s *suite) req(holder string, lo, hi int, nowMs int64) lease.ClaimRequest {
	return lease.ClaimRequest{
		Holder:   holder,
		Range:    lease.Range{Lo: lo, Hi: hi},
		NowMs:    nowMs,
		LeaseFor: s.h.LeaseFor,
		MaxAhead: time.Hour,
	}
}

// MustClaim claims with r, failing the test on an error, on a number outside
// r.Range, or on a lease that is not r.Holder's or starts below r.NowMs.
func MustClaim(t testing.TB, st lease.Store, r lease.ClaimRequest) *lease.Lease {
	t.Helper()
	l, err := st.Claim(ctxFor(t), r)
	if err != nil {
		t.Fatalf("Claim(%s in %s at %d): %v", r.Holder, r.Range, r.NowMs, err)
	}
	if !r.Range.Contains(l.Machine) {
		t.Fatalf("Claim(%s in %s) = machine %d, outside the range", r.Holder, r.Range, l.Machine)
	}
	if l.Holder != r.Holder || l.StartMs < r.NowMs {
		t.Fatalf("Claim(%s at %d) = %v starting at %d; want holder %s and a start at or above the claimer's clock",
			r.Holder, r.NowMs, l, l.StartMs, r.Holder)
	}
	return l
}

func (s *suite) mustExtend(t testing.TB, st lease.Store, l *lease.Lease, markMs int64) *lease.Lease {
	t.Helper()
	return MustExtend(t, st, l, markMs, s.h.LeaseFor)
}

// MustExtend extends l to markMs, failing the test on an error or on a
// returned mark below markMs.
func MustExtend(t testing.TB, st lease.Store, l *lease.Lease, markMs int64, leaseFor time.Duration) *lease.Lease {
	t.Helper()
	nl, err := st.Extend(ctxFor(t), l, markMs, leaseFor)
	if err != nil {
		t.Fatalf("Extend(machine %d token %d, %d): %v", l.Machine, l.Token, markMs, err)
	}
	if nl.MarkMs < markMs {
		t.Fatalf("Extend(machine %d token %d, %d) returned mark %d, below the one asked for", l.Machine, l.Token, markMs, nl.MarkMs)
	}
	return nl
}

// MustRelease releases l recording markMs, failing the test on an error.
func MustRelease(t testing.TB, st lease.Store, l *lease.Lease, markMs int64) {
	t.Helper()
	if err := st.Release(ctxFor(t), l, markMs); err != nil {
		t.Fatalf("Release(machine %d token %d, %d): %v", l.Machine, l.Token, markMs, err)
	}
}

// MustGet reads the record of machine, failing the test on an error.
func MustGet(t testing.TB, st lease.Store, machine int) lease.Record {
	t.Helper()
	rec, err := st.Get(ctxFor(t), machine)
	if err != nil {
		t.Fatalf("Get(%d): %v", machine, err)
	}
	return rec
}

// expire makes l lapse and returns a claimer's clock, at or after nowMs, at
// which it has: for ClockExpiry stores one past the record's expiry, for
// the others nowMs after the harness's Expire.
func (s *suite) expire(t *testing.T, st lease.Store, l *lease.Lease, nowMs int64) int64 {
	t.Helper()
	if s.h.Expire != nil {
		s.h.Expire(t, st, l)
	}
	if !s.h.ClockExpiry {
		if s.h.Expire == nil {
			t.Fatal("leasetest: Harness.Expire is nil and ClockExpiry is false: the suite cannot expire a lease")
		}
		return nowMs
	}
	rec := MustGet(t, st, l.Machine)
	if rec.ExpiresMs == 0 {
		t.Fatalf("Get(%d) = %+v: a ClockExpiry store must report ExpiresMs", l.Machine, rec)
	}
	return max(nowMs, rec.ExpiresMs+1)
}

// untilIssuing lets clk run, in half-second steps in which the n keeper
// loops asleep on it renew, until every keeper of ks has a grant that has
// started at the clock's reading: every claim's first grant waits out the
// store's notice window (lease.Store.MaxNoticeWindow), so a keeper just
// started (or that just claimed again) refuses until then.
func untilIssuing(t *testing.T, ctx context.Context, clk *fakeclock.Clock, n int, ks ...*lease.Keeper) {
	t.Helper()
	issuing := func() bool {
		for _, k := range ks {
			g, err := k.Grant()
			if err != nil || clk.Now().WallMs < g.StartMs {
				return false
			}
		}
		return true
	}
	for start := clk.Time(); !issuing(); {
		if clk.Time().Sub(start) > 10*time.Minute {
			t.Fatalf("not every keeper issues 10 min after %s", start)
		}
		if err := clk.BlockUntilWaiters(ctx, n); err != nil {
			t.Fatalf("%d keeper loops never went to sleep: %v", n, err)
		}
		clk.Advance(500 * time.Millisecond)
	}
	if err := clk.BlockUntilWaiters(ctx, n); err != nil {
		t.Fatalf("%d keeper loops never went back to sleep: %v", n, err)
	}
}

// adminStore is s.store as a lease.Admin, for the checks of RunAdmin: it
// fails the test if the harness's store has no operator's actions.
func (s *suite) adminStore(t *testing.T) lease.Admin {
	t.Helper()
	return mustAdmin(t, s.store(t))
}

// adminReopen is s.reopen as a lease.Admin.
func (s *suite) adminReopen(t *testing.T, st lease.Admin) lease.Admin {
	t.Helper()
	return mustAdmin(t, s.reopen(t, st))
}

// mustAdmin returns st as a lease.Admin, failing the test if it is not
// one.
func mustAdmin(t *testing.T, st lease.Store) lease.Admin {
	t.Helper()
	a, ok := st.(lease.Admin)
	if !ok {
		t.Fatalf("%T is not a lease.Admin: RunAdmin checks the operator's actions, which the store does not have", st)
	}
	return a
}

// driveClock moves clk on by step each time want() loops are asleep on it,
// until the returned stop is called: while keepers start on a fake clock,
// one whose claim failed for a reason a retry fixes (a request that timed
// out on a store loaded by a CI run) waits out its retry on that clock,
// which nothing else moves until every start has returned. The steps are
// small and taken only when every loop sleeps, as time passing would.
func driveClock(ctx context.Context, clk *fakeclock.Clock, want func() int, step time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			wctx, wcancel := context.WithTimeout(ctx, 100*time.Millisecond) // re-read want() at least this often
			err := clk.BlockUntilWaiters(wctx, want())
			wcancel()
			if err == nil && ctx.Err() == nil {
				clk.Advance(step)
			}
		}
	}()
	return func() { cancel(); <-done }
}
