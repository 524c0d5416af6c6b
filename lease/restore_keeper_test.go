package lease_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// TestKeeperAfterRestoreFromOldSnapshot restores etcd, under a new cluster
// token (so a new cluster ID), from a snapshot taken while a keeper held its
// number, after the keeper issued and renewed further. The keeper's next
// renewal fails with ErrRestored; it claims again, and its next IDs start
// above everything it issued or reserved before the restore, and no earlier
// than its clock at the loss plus RestoreMargin.
func TestKeeperAfterRestoreFromOldSnapshot(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	// The fake clock starts at the real time: the store's own restore
	// floor is on the real clock.
	clk := fakeclock.New(time.Now().Truncate(time.Millisecond))
	h := mustHolder(t, s, clk, "a", lease.Range{Lo: 0, Hi: 3})
	h.mint(500)
	snap := c.Snapshot(t)
	for range 3 {
		h.step(2 * time.Second)
		h.mint(500)
	}
	before := slices.Clone(h.ids)
	reserved := h.k.Status().MarkMs // the highest mark reserved before the restore

	c.Restore(t, snap, etcdtest.RestoreOptions{NewClusterToken: true})
	waitAnswers(t, s)
	// Scheduled renewals until the keeper has noticed (a renewal may first
	// fail on a connection the restart broke).
	var lostAt int64
	for i := 0; i < 10 && h.k.Status().Losses == 0; i++ {
		lostAt = clk.Now().WallMs + 2000
		h.step(2 * time.Second)
	}
	st := h.k.Status()
	if st.Losses != 1 || !strings.Contains(st.LastError, lease.ErrRestored.Error()) {
		t.Fatalf("after the restore: status %+v, want one loss with ErrRestored", st)
	}
	if _, err := h.g.Next(context.Background()); !isFenced(err) {
		t.Fatalf("right after the re-claim: %v, want ErrFenced (the new lease starts RestoreMargin ahead)", err)
	}
	if st.State != lease.StateHeld || st.Claims != 2 {
		t.Fatalf("the keeper did not claim again: %+v", st)
	}
	// Let the clock reach the new lease's start (the keeper's default
	// RestoreMargin is max(Reserve, SelfFence) × 1.1 + 1 s = 12 s, and the
	// store starts claims that window after it noticed); the keeper renews
	// on the way.
	g, err := h.k.Grant()
	if err != nil {
		t.Fatal(err)
	}
	h.step(max(13*time.Second, time.Duration(g.StartMs-clk.Now().WallMs+1)*time.Millisecond))
	after := h.mint(500)
	first := after[0]
	firstMs := snowfence.V1().TimeOf(first).UnixMilli()
	if maxBefore := slices.Max(before); first <= maxBefore {
		t.Errorf("first ID after the restore %d is not above the last before %d", first, maxBefore)
	}
	if firstMs < reserved {
		t.Errorf("first ID after the restore stamped %d, below the mark %d reserved before it", firstMs, reserved)
	}
	if floor := lostAt + lease.RestoreWindow(10*time.Second, 5*time.Second).Milliseconds(); firstMs < floor {
		t.Errorf("first ID after the restore stamped %d, want ≥ the clock at the loss + RestoreMargin = %d", firstMs, floor)
	}
	t.Logf("restore noticed: %s; re-claimed machine %d (was %d); first ID %v after it, %v past the old reservation",
		st.LastError[:min(len(st.LastError), 120)], st.Machine, snowfence.V1().Split(before[0]).Machine,
		time.Duration(firstMs-lostAt)*time.Millisecond, time.Duration(firstMs-reserved)*time.Millisecond)
	checkUnique(t, before, after)
}

// TestRaiseMarksAfterUndetectableRestore: etcd restored from an old
// snapshot under its old cluster token with its revision bumped cannot be
// told from the original by a process that never saw it before — its
// revision did not fall and its cluster ID did not change. (x, which wrote
// its mark after the snapshot, does notice at its next renewal; a fresh
// process cannot.) A number claimed after the snapshot comes back
// free, with its old mark (here none), although its holder issued up to a
// mark in the lost history and may still be issuing until its next renewal
// fails. A process that starts now could not know: it would start at its
// own clock, inside the lost holder's reservation. The operator command
// Store.RaiseMarks(range, now+1m), run before any new holder claims (the
// runbook's step), makes a fresh holder start above everything issued before
// the restore.
func TestRaiseMarksAfterUndetectableRestore(t *testing.T) {
	t.Parallel()
	const n = 2
	c := etcdtest.Start(t, 1)
	rng := lease.Range{Lo: 0, Hi: 3}
	start := time.Now().Truncate(time.Millisecond)
	snap := c.Snapshot(t)

	s := newStore(t, c.Endpoints())
	x := mustHolder(t, s, fakeclock.New(start), "x", lease.Range{Lo: n, Hi: n})
	x.mint(1000)
	x.step(2 * time.Second)
	x.mint(1000)
	lostMark := x.k.Status().MarkMs

	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitAnswers(t, s)
	// x cannot tell: until its next renewal it goes on issuing below the
	// mark it reserved in the lost history.
	x.mint(100)

	// What a fresh process sees: number n free, with a mark below what x
	// reserved (none at all: it was first claimed after the snapshot).
	fresh := newStore(t, c.Endpoints())
	rec, err := fresh.Get(testCtx(t), n)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Held() || rec.MarkMs >= lostMark {
		t.Fatalf("restored record %+v: want it free with a mark below the lost holder's %d (else this test shows nothing)", rec, lostMark)
	}
	// The operator's command, before any new holder claims.
	now := x.clk.Now().WallMs
	changed, err := fresh.RaiseMarks(testCtx(t), rng, now+time.Minute.Milliseconds())
	if err != nil || changed != rng.Size() {
		t.Fatalf("RaiseMarks = %d, %v; want %d, nil", changed, err, rng.Size())
	}

	// x's next renewal finds its owner key gone: it stops.
	x.step(2 * time.Second)
	if _, err := x.g.Next(context.Background()); !isFenced(err) {
		t.Errorf("the lost holder after its renewal: %v, want ErrFenced", err)
	}

	// A fresh holder, its clock where x's is: every number's mark is now a
	// minute ahead. The keeper takes a number anyway (within MaxWait) and
	// its generator refuses until the clock reaches the raised mark
	// (docs/runbook.md); it never issues below it.
	clkF := fakeclock.New(time.UnixMilli(now))
	f, err := startHolder(t, fresh, clkF, "fresh", lease.Range{Lo: 0, Hi: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Next(context.Background()); !isFenced(err) {
		t.Errorf("fresh holder before the raised mark: %v, want ErrFenced (not started)", err)
	}
	for range 31 {
		f.step(2 * time.Second)
	}
	ids := f.mint(1000)
	if ms := snowfence.V1().TimeOf(ids[0]).UnixMilli(); ms < now+time.Minute.Milliseconds() || ids[0] <= slices.Max(x.ids) {
		t.Errorf("fresh holder's first ID %d stamped %d: want at or above the raised mark %d and above the lost holder's last ID %d",
			ids[0], ms, now+time.Minute.Milliseconds(), slices.Max(x.ids))
	}
	checkUnique(t, x.ids, ids)
}
