package leasetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// The checks of this file play a restore the server itself cannot show (a
// file-level copy of a PostgreSQL data directory put back, a copy of
// dynalite's data, rows written back by hand): the harness's Rollback
// copies the store's data aside and later writes it back, and the checks
// look at what a Store value that saw the later state must make of the
// earlier one. Each sign is only possible after such a rollback:
//
//   - an epoch lower than one the store saw for that number (epochs only
//     grow: a claim, a quarantine, raise-marks each add one);
//   - a number's row gone (no write deletes one);
//   - the epoch it saw, under another claim (each claim writes a new
//     nonce and a new epoch);
//   - a mark lower than one it saw under the same claim, while held (a
//     renewal only raises it) or free (only raise-marks writes a free
//     row's mark, and only upward); a released claim held again.
//
// What the store must then do: fail the call that saw the sign with
// lease.ErrRestored (Extend, Release, Get — the keeper's re-read), fence
// every lease it claimed before (ErrRestored at the next Extend), and start
// every claim through it and its Keyspace siblings at least the restore
// window ahead of the claimer's clock, as etcdstore does once it noticed.
// An ordinary loss — expiry and a claim with a higher epoch, a quarantine,
// raise-marks, a release — is none of these (checkLossNotRestore).

// rollbackStore is a store for a check of this file: s.store, after a
// skip for a harness without Rollback.
func (s *suite) rollbackStore(t *testing.T) lease.Store {
	t.Helper()
	if s.h.Rollback == nil {
		t.Skip("the harness has no Rollback: the store's own tests play its restores (etcdstore: restore_test.go)")
	}
	return s.store(t)
}

// rollback copies st's data aside (Harness.Rollback) and returns the
// function that writes it back.
func (s *suite) rollback(t *testing.T, st lease.Store) func() {
	t.Helper()
	return s.h.Rollback(t, st)
}

// wantFloored checks that a claim of one number of r, at the claimer's
// clock nowMs, through st starts at least st's restore window ahead.
func (s *suite) wantFloored(t *testing.T, name string, st lease.Store, r lease.ClaimRequest) {
	t.Helper()
	l := MustClaim(t, st, r)
	if want := r.NowMs + st.MaxRestoreWindow().Milliseconds(); l.StartMs < want {
		t.Errorf("%s: claim after the restore was noticed starts at %d, want ≥ the claimer's clock + the restore window = %d",
			name, l.StartMs, want)
	}
}

// checkRollbackEpochFell: B holds a number A held before; the data is put
// back to A's time, so the number's epoch falls below B's. B's renewal
// must take that for a restore, not a plain loss: ErrRestored, every other
// lease of B's store fenced, and every claim through it — and through its
// sibling on another keyspace — starting a restore window ahead, above
// anything a holder cut off by the restore may still issue. A release that
// meets the same sign fails likewise.
func checkRollbackEpochFell(t *testing.T, s *suite) {
	st := s.rollbackStore(t)
	bs := s.reopen(t, st)
	nowMs := now()
	a := s.mustExtend(t, st, MustClaim(t, st, s.req("a", 3, 3, nowMs)), s.top(nowMs)+1000)
	// Leases the restore leaves as they were: B's store's own, and one
	// another store claimed, for the release below.
	other := s.mustExtend(t, bs, MustClaim(t, bs, s.req("o", 4, 4, nowMs)), s.top(nowMs)+1000)
	r := MustClaim(t, st, s.req("r", 5, 5, nowMs))
	put := s.rollback(t, st)
	at := s.expire(t, st, a, nowMs)
	b := s.mustExtend(t, bs, MustClaim(t, bs, s.req("b", 3, 3, at)), s.top(at)+1000)
	put()

	if _, err := bs.Extend(ctxFor(t), b, s.top(at)+2000, s.h.LeaseFor); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("Extend of a lease whose number's epoch fell below its own: %v, want ErrRestored", err)
	}
	if _, err := bs.Extend(ctxFor(t), other, s.top(at)+2000, s.h.LeaseFor); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("Extend of another lease of the store, claimed before it noticed, its row untouched by the restore: %v, "+
			"want ErrRestored (every lease claimed before is fenced)", err)
	}
	s.wantFloored(t, "same store", bs, s.req("c", 7, 7, at+1))
	s.wantFloored(t, "sibling on another keyspace", mustKeyspace(t, bs, regionOf(t, bs)+1), s.req("c", 7, 7, at+1))

	// A release that meets the same sign, in a store that noticed nothing
	// before: it saw the number at R2's epoch, then lower.
	fresh := s.reopen(t, st)
	at2 := s.expire(t, st, r, at)
	r2 := s.mustExtend(t, fresh, MustClaim(t, fresh, s.req("r2", 5, 5, at2)), s.top(at2)+1000)
	put()
	if err := fresh.Release(ctxFor(t), r2, s.top(at2)); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("Release of a lease whose number's epoch fell below its own: %v, want ErrRestored", err)
	}
}

// checkRollbackEpochRepeated: B claimed a number at epoch e; the data goes
// back to before, and C claims it again — at epoch e once more, under
// another claim. B's store re-reading the number (the keeper's re-read
// after an extension of unknown outcome is a Get) must say ErrRestored,
// not name C as the holder, and B's lease is fenced from then on.
func checkRollbackEpochRepeated(t *testing.T, s *suite) {
	st := s.rollbackStore(t)
	nowMs := now()
	a := s.mustExtend(t, st, MustClaim(t, st, s.req("a", 2, 2, nowMs)), s.top(nowMs)+1000)
	put := s.rollback(t, st)
	bs := s.reopen(t, st)
	at := s.expire(t, st, a, nowMs)
	b := s.mustExtend(t, bs, MustClaim(t, bs, s.req("b", 2, 2, at)), s.top(at)+1000)
	put()
	cs := s.reopen(t, st)
	c := MustClaim(t, cs, s.req("c", 2, 2, at))
	if c.Token != b.Token || c.Claim == b.Claim {
		t.Fatalf("C's claim after the restore: token %d claim %q; the check needs B's token %d under another claim", c.Token, c.Claim, b.Token)
	}
	if rec, err := bs.Get(ctxFor(t), 2); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("B's store reading its number held at B's token by another claim: %+v, %v; want ErrRestored", rec, err)
	}
	if _, err := bs.Extend(ctxFor(t), b, s.top(at)+2000, s.h.LeaseFor); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("B's Extend after its store noticed: %v, want ErrRestored", err)
	}
	s.mustExtend(t, cs, c, s.top(at)+2000) // C's store saw nothing amiss
}

// checkRollbackOwnMarkFell: A renewed after the copy was taken; the copy
// put back shows A's own claim with the lower mark it had then. A's next
// renewal must not simply succeed on it: A may have issued up to the mark
// it wrote, which the store no longer keeps, and a claimer whose clock
// passed the restored mark may already have taken the number.
func checkRollbackOwnMarkFell(t *testing.T, s *suite) {
	st := s.rollbackStore(t)
	nowMs := now()
	a := s.mustExtend(t, st, MustClaim(t, st, s.req("a", 1, 1, nowMs)), s.top(nowMs)+1000)
	put := s.rollback(t, st)
	a = s.mustExtend(t, st, a, s.top(nowMs)+5000)
	put()
	if _, err := st.Extend(ctxFor(t), a, s.top(nowMs)+6000, s.h.LeaseFor); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("Extend of a lease whose own mark came back lower than it wrote: %v, want ErrRestored", err)
	}
	s.wantFloored(t, "A's store", st, s.req("a2", 8, 8, nowMs))
}

// checkRollbackReleaseOwnMarkFell: as checkRollbackOwnMarkFell, but A
// releases instead: the row put back shows A's own claim with a lower mark,
// and an older renewal value of A's own. The release must still succeed
// and record the end of what A issued: that is the mark the next claimer
// must start above, and refusing it would leave the restored, lower mark
// held, to be claimed from once a claimer's clock passed it — below IDs A
// issued.
func checkRollbackReleaseOwnMarkFell(t *testing.T, s *suite) {
	st := s.rollbackStore(t)
	nowMs := now()
	a := s.mustExtend(t, st, MustClaim(t, st, s.req("a", 1, 1, nowMs)), s.top(nowMs)+1000)
	put := s.rollback(t, st)
	a = s.mustExtend(t, st, a, s.top(nowMs)+5000)
	put()
	if err := st.Release(ctxFor(t), a, a.MarkMs); err != nil {
		t.Fatalf("Release of a lease whose own mark came back lower than it wrote: %v, want success "+
			"(it records the end of what the holder issued)", err)
	}
	if rec := MustGet(t, st, 1); rec.Held() || rec.MarkMs < a.MarkMs {
		t.Fatalf("record after the release: %+v, want free with a mark ≥ %d, the end of what A issued", rec, a.MarkMs)
	}
	at := s.top(nowMs) + 1001 // past the restored mark, before A's real one
	if l := MustClaim(t, s.reopen(t, st), s.req("b", 1, 1, at)); l.StartMs < a.MarkMs {
		t.Errorf("B's claim after A's release starts at %d, below the end of what A issued, %d", l.StartMs, a.MarkMs)
	}
}

// checkRollbackRenewalValueBack: A's renewals since the copy moved no mark
// (each asked for one at or below the mark its claim wrote), but each
// wrote a renewal value; the copy put back shows A's claim and mark as they
// are, with a value A wrote before its last. No clone writes one (a clone
// draws its own): the record went back in time, as surely as by any sign
// the rows show. A's renewal gets lease.ErrRestored, and the store takes it
// as it takes those signs: B's lease, claimed before and untouched by the
// restore, is fenced, and claims start a restore window ahead.
func checkRollbackRenewalValueBack(t *testing.T, s *suite) {
	st := s.rollbackStore(t)
	nowMs := now()
	a := MustClaim(t, st, s.req("a", 1, 1, nowMs))
	b := s.mustExtend(t, st, MustClaim(t, st, s.req("b", 2, 2, nowMs)), s.top(nowMs)+1000)
	a = s.mustExtend(t, st, a, a.MarkMs) // a value written, the mark as the claim left it
	put := s.rollback(t, st)
	was := a.MarkMs
	a = s.mustExtend(t, st, a, a.MarkMs)
	if a.MarkMs != was {
		t.Fatalf("A's second renewal moved its mark from %d to %d; the check needs renewals that move none", was, a.MarkMs)
	}
	put()
	if _, err := st.Extend(ctxFor(t), a, a.MarkMs+1000, s.h.LeaseFor); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("Extend of a lease whose record holds a renewal value it wrote before its last: %v, want ErrRestored", err)
	}
	if _, err := st.Extend(ctxFor(t), b, s.top(nowMs)+2000, s.h.LeaseFor); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("Extend of another lease of the store, claimed before it noticed, its row untouched by the restore: %v, "+
			"want ErrRestored (every lease claimed before is fenced)", err)
	}
	s.wantFloored(t, "A's store", st, s.req("c", 3, 3, nowMs))
}

// checkRollbackSeenByClaimer: D, holding nothing of A's, read A's number
// at A's latest mark; the data goes back to when A's mark was lower, and
// D's clock passes that restored mark while A, not yet renewed, still
// issues below its real one. D's claim of A's number — what a holder that
// lost its own number to the restore does at once — must start the
// restore window ahead, not at its clock: the scan it claims from shows
// the mark fell.
func checkRollbackSeenByClaimer(t *testing.T, s *suite) {
	st := s.adminRollbackStore(t)
	nowMs := now()
	a := s.mustExtend(t, st, MustClaim(t, st, s.req("a", 1, 1, nowMs)), s.top(nowMs)+1000)
	put := s.rollback(t, st)
	a = s.mustExtend(t, st, a, s.top(nowMs)+60_000)
	ds := s.adminReopen(t, st)
	if _, err := ds.List(ctxFor(t)); err != nil {
		t.Fatalf("D's List: %v", err)
	}
	put()
	at := s.top(nowMs) + 1001 // past the restored mark, before A's real one
	l, err := ds.Claim(ctxFor(t), s.req("d", 1, 1, at))
	if err != nil {
		t.Fatalf("D's claim of A's number: %v", err)
	}
	if l.StartMs < a.MarkMs {
		t.Errorf("D's claim starts at %d, below A's mark %d: A issues there until its next renewal", l.StartMs, a.MarkMs)
	}
	if want := at + ds.MaxRestoreWindow().Milliseconds(); l.StartMs < want {
		t.Errorf("D's claim starts at %d, want ≥ its clock + the restore window = %d", l.StartMs, want)
	}
}

// checkLossNotRestore: what an ordinary loss looks like is no sign of a
// restore. A holder whose number expired and was claimed (a higher
// epoch), was quarantined, or was fenced by raise-marks gets ErrLost or
// ErrQuarantined; its store reads the number through every such change,
// and an unquarantine (whose mark falls from the quarantine's to the one
// kept) and a release (whose mark may fall below the holder's
// reservation), without an error; and its next claims start at the
// claimer's clock, not a restore window ahead.
func checkLossNotRestore(t *testing.T, s *suite) {
	st := s.adminStore(t)
	op := s.adminReopen(t, st)
	nowMs := now()
	base := s.top(nowMs)
	read := func(what string, n int) {
		t.Helper()
		if rec, err := st.Get(ctxFor(t), n); err != nil {
			t.Errorf("Get(%d) after %s: %+v, %v; want no error", n, what, rec, err)
		}
		if _, err := st.List(ctxFor(t)); err != nil {
			t.Errorf("List after %s: %v; want no error", what, err)
		}
	}
	// Expired and claimed by another.
	a := s.mustExtend(t, st, MustClaim(t, st, s.req("a", 1, 1, nowMs)), base+1000)
	read("the claim", 1)
	at := s.expire(t, st, a, nowMs)
	b := MustClaim(t, op, s.req("b", 1, 1, at))
	if _, err := st.Extend(ctxFor(t), a, s.top(at)+2000, s.h.LeaseFor); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Extend after the number expired and was claimed: %v, want ErrLost", err)
	}
	read("another holder's claim", 1)
	// Released, and its mark below the reservation.
	s.mustExtend(t, op, b, s.top(at)+9000)
	read("a renewal", 1)
	MustRelease(t, op, b, at+1)
	read("a release below the reservation", 1)
	// Quarantined, then unquarantined.
	q := s.mustExtend(t, st, MustClaim(t, st, s.req("q", 2, 2, nowMs)), base+1000)
	read("the claim", 2)
	if err := op.Quarantine(ctxFor(t), 2); err != nil {
		t.Fatal(err)
	}
	read("a quarantine", 2)
	if _, err := st.Extend(ctxFor(t), q, base+2000, s.h.LeaseFor); !errors.Is(err, lease.ErrQuarantined) {
		t.Errorf("Extend of a quarantined number: %v, want ErrQuarantined", err)
	}
	if err := op.Unquarantine(ctxFor(t), 2); err != nil {
		t.Fatal(err)
	}
	read("an unquarantine", 2)
	// Fenced by raise-marks.
	r := s.mustExtend(t, st, MustClaim(t, st, s.req("r", 3, 3, nowMs)), base+1000)
	read("the claim", 3)
	if _, err := op.RaiseMarks(ctxFor(t), lease.Range{Lo: 3, Hi: 4}, base+500); err != nil {
		t.Fatal(err)
	}
	read("raise-marks", 3)
	if _, err := st.Extend(ctxFor(t), r, base+3000, s.h.LeaseFor); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Extend after raise-marks: %v, want ErrLost", err)
	}
	// Nothing noticed: a claim starts at the claimer's clock (or a mark).
	claimAt := base + 600
	l := MustClaim(t, st, s.req("next", 4, 4, claimAt))
	if l.StartMs >= claimAt+time.Minute.Milliseconds() {
		t.Errorf("claim after ordinary losses starts at %d, a restore window ahead of its clock %d: the losses were taken for a restore",
			l.StartMs, claimAt)
	}
	// A lease claimed before all this still extends.
	s.mustExtend(t, st, l, s.top(claimAt)+1000)
}

// checkRollbackFloorsEveryKeeper: two keepers of one process share a
// Store value, each on a clock of its own. K1 renews after the copy is
// taken, the copy is put back, and K1's next renewal notices (its own mark
// fell). K2's row shows nothing — it wrote nothing since the copy — but
// K2's lease is fenced at its next renewal all the same, and its next
// lease starts at the store's floor, a whole restore window after K1
// noticed: far above what K2's own restore window would give it, so that
// whatever holder the restore cut off, however long its timings, has
// stopped.
func checkRollbackFloorsEveryKeeper(t *testing.T, s *suite) {
	st := s.rollbackStore(t)
	start := time.UnixMilli(now()).Truncate(time.Second)
	type keeper struct {
		k   *lease.Keeper
		clk *fakeclock.Clock
	}
	settle := func(kp keeper) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		if err := kp.clk.BlockUntilWaiters(ctx, 1); err != nil {
			t.Fatalf("keeper never went back to sleep: %v (status %+v)", err, kp.k.Status())
		}
	}
	step := func(kp keeper, d time.Duration) {
		t.Helper()
		settle(kp)
		kp.clk.Advance(d)
		settle(kp)
	}
	run := func(name string, rng lease.Range) keeper {
		t.Helper()
		clk := fakeclock.New(start)
		// The story runs on the fake clock; a store call's own time is
		// the machine's, so its deadline is generous (the default,
		// RenewEvery / 2 = 500 ms of real time, timed out a dynalite claim
		// under load and hid the loss this checks behind the claim's error).
		k, err := StartKeeper(ctxFor(t), lease.KeeperConfig{Store: st, Holder: name, Range: &rng, Clock: clk,
			LeaseFor: s.h.LeaseFor, RenewEvery: time.Second, SelfFence: s.h.LeaseFor / 2, RequestTimeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("StartKeeper(%s): %v", name, err)
		}
		t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) }) // no generator
		kp := keeper{k, clk}
		settle(kp)
		return kp
	}
	k1 := run("k1", lease.Range{Lo: 0, Hi: 1})
	k2 := run("k2", lease.Range{Lo: 2, Hi: 3})
	put := s.rollback(t, st)
	step(k1, time.Second)
	put()
	noticed := k1.clk.Now().WallMs + time.Second.Milliseconds()
	step(k1, time.Second)
	if st1 := k1.k.Status(); st1.Losses != 1 || !strings.Contains(st1.LastError, lease.ErrRestored.Error()) {
		t.Fatalf("K1 after the restore: %+v, want one loss to ErrRestored (its own mark fell)", st1)
	}
	step(k2, time.Second)
	st2 := k2.k.Status()
	if st2.Losses != 1 || !strings.Contains(st2.LastError, lease.ErrRestored.Error()) {
		t.Fatalf("K2, whose row the restore left as it was: %+v, want one loss to ErrRestored (the store fences every lease claimed before)", st2)
	}
	l := k2.k.Lease()
	if l == nil {
		t.Fatalf("K2 did not claim again: %+v", st2)
	}
	if want := noticed + st.MaxRestoreWindow().Milliseconds(); l.StartMs < want {
		t.Errorf("K2's next lease starts at %d, want ≥ the moment K1 noticed + the store's restore window = %d "+
			"(K2's own window would give %d)", l.StartMs, want, k2.clk.Now().WallMs+lease.RestoreWindow(s.h.LeaseFor, s.h.LeaseFor/2).Milliseconds())
	}
}

// adminRollbackStore is rollbackStore as a lease.Admin.
func (s *suite) adminRollbackStore(t *testing.T) lease.Admin {
	t.Helper()
	return mustAdmin(t, s.rollbackStore(t))
}
