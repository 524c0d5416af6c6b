package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// cutover is a v2 cutover far after t0, so machine numbers 0-511 fit both
// layouts and a range of them passes the start check.
const cutover = "2030-01-01T00:00:00Z"

// A keeper whose schedule differs from the fleet's is refused at once by
// StartKeeper with ErrSchedule, rather than retried until its context ends.
func TestKeeperScheduleRefusedAtStart(t *testing.T) {
	c := etcdtest.Start(t, 1)
	w := &wrapStore{Store: newStore(t, c.Endpoints())}
	sched, _ := snowfence.ParseSchedule("v1,v2@" + cutover)
	_, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{
		Store: w, Holder: "a", Range: &lease.Range{Lo: 0, Hi: 511}, Clock: fakeclock.New(t0), Schedule: sched})
	if !errors.Is(err, lease.ErrSchedule) {
		t.Fatalf("StartKeeper on v1,v2 with the fleet on v1: %v, want ErrSchedule", err)
	}
	if reqs := w.requests(); len(reqs) != 1 || reqs[0].Schedule != sched.String() {
		t.Errorf("claims %+v, want one carrying %q", reqs, sched.String())
	}
}

// The fleet schedule changes under a holder to one that differs from its
// own from T on: it goes on renewing while its marks stay below T — the
// fleet's notice to restart on the new schedule — and the renewal whose
// mark would reach T is refused with ErrSchedule, which is final: the
// generator stops at once, the number is released, and the keeper asks
// again at the renewal pace, not in a tight loop.
func TestKeeperScheduleChangedUnderHolder(t *testing.T) {
	c := etcdtest.Start(t, 1)
	w := &wrapStore{Store: newStore(t, c.Endpoints())}
	clk := fakeclock.New(t0)
	h := mustHolder(t, w, clk, "a", lease.Range{Lo: 2, Hi: 2})
	h.mint(5)
	at := clk.Time().Add(15 * time.Second) // renewals reserve 10 s ahead: the one 6 s from now would reach it
	if _, err := w.admin().SetFleetSchedule(testCtx(t), 0, "v1,v2@"+at.Format(time.RFC3339)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		h.step(2 * time.Second)
		if _, err := h.g.Next(context.Background()); err != nil {
			t.Fatalf("at %s, mark %s below the cutover %s: %v, want it still issuing",
				clk.Time().Format(time.RFC3339), time.UnixMilli(h.k.Status().MarkMs).UTC().Format(time.RFC3339), at.Format(time.RFC3339), err)
		}
	}
	h.step(2 * time.Second)
	if _, err := h.g.Next(context.Background()); !isFenced(err) {
		t.Fatalf("renewal whose mark would pass the cutover: %v, want ErrFenced", err)
	}
	st := h.k.Status()
	if st.Losses != 1 || st.State != lease.StateClaiming || !strings.Contains(st.LastError, lease.ErrSchedule.Error()) {
		t.Fatalf("status %+v, want one loss with ErrSchedule, claiming again", st)
	}
	if rec, err := w.Get(testCtx(t), 2); err != nil || rec.Held() {
		t.Errorf("machine 2 after the refusal: %+v, %v; want it released", rec, err)
	}
	claims := len(w.requests())
	h.step(2 * time.Second)
	if got := len(w.requests()) - claims; got != 1 {
		t.Errorf("%d claims in one renewal period after the refusal, want 1", got)
	}
}

// The generator takes the keeper's schedule when given none, and refuses
// a different one: the keeper claims with its own.
func TestGeneratorSharesKeeperSchedule(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	sched, _ := snowfence.ParseSchedule("v1,v2@" + cutover)
	if _, err := s.SetFleetSchedule(testCtx(t), 0, sched.String()); err != nil {
		t.Fatalf("set the fleet schedule: %v", err)
	}
	clk := fakeclock.New(t0)
	k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{Store: s, Holder: "a", Range: &lease.Range{Lo: 0, Hi: 511}, Clock: clk, Schedule: sched})
	if err != nil {
		t.Fatal(err)
	}
	var g *snowfence.Generator
	t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
	if _, err := snowfence.New(snowfence.Config{Lease: k, Schedule: snowfence.DefaultSchedule(), ClockPolicy: snowfence.ClockOff}); !errors.Is(err, snowfence.ErrInvalidConfig) {
		t.Errorf("generator on v1 with a keeper on %s: %v, want ErrInvalidConfig", sched, err)
	}
	g, err = snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	// The keeper renews as the clock jumps, claims its v2 number, and
	// issues on it once the claim's notice window has passed; mint after.
	h := &holder{t: t, k: k, g: g, clk: clk}
	h.step(2 * time.Second)
	h.issuing()
	id, err := g.Next(context.Background())
	if err != nil {
		t.Fatalf("after the cutover: %v", err)
	}
	if d, _ := sched.Decode(id); d.Layout != "v2" {
		t.Errorf("ID after the cutover decodes as %s, want v2: the generator did not take the keeper's schedule", d.Layout)
	}
}

// TestScheduleCutoverBeforeReservedMarks: SetSchedule refuses a cutover before
// marks the fleet already holds, whatever the operator's clock reads (an
// adversarial review of issue 10's fixes found it). The notice SetSchedule
// demands (now + 1 h) was measured on the operator's clock, and the marks that
// holders already reserved under the old fleet schedule were never compared
// with the new cutover: only the next extension was (CheckExtension).
// Uniqueness is promised not to depend on clock sync (docs/deployment.md), yet
// an operator whose clock is 2 h slow (or, the same thing, holders whose
// clocks are 2 h fast) puts the cutover before marks the fleet already holds.
// The v1 holder on machine 1 goes on issuing below its mark (v1 layout) while
// a holder on the new schedule mints on machine 4 under v2 in the same
// milliseconds: 1<<12 == 4<<10, the same ID.
// SetSchedule now counts the notice from the later of the operator's clock
// and the highest mark stored, and refuses.
func TestScheduleCutoverBeforeReservedMarks(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	clk := fakeclock.New(t0)
	old := mustHolder(t, s, clk, "old", lease.Range{Lo: 1, Hi: 1})

	// The operator's host runs 2 h behind the fleet.
	opNow := t0.Add(-2 * time.Hour)
	at := opNow.Add(time.Hour + time.Minute).Truncate(time.Second)
	text := "v1,v2@" + at.Format(time.RFC3339)
	_, err := lease.SetSchedule(testCtx(t), s, text, opNow, 0)
	if !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("SetSchedule %s on the operator's clock %s, 2 h behind the mark %s: %v; want ErrInvalid",
			text, opNow.Format(time.RFC3339), time.UnixMilli(old.k.Status().MarkMs).UTC().Format(time.RFC3339), err)
	}
	t.Logf("refused: %v", err)
	if !revert.Schedule {
		return
	}
	// Under the revert tag, write it anyway and show the duplicate.
	if _, err := s.SetFleetSchedule(testCtx(t), 0, text); err != nil {
		t.Fatal(err)
	}
	sched, err := snowfence.ParseSchedule(text)
	if err != nil {
		t.Fatal(err)
	}
	nu := mustHolder(t, s, clk, "new", lease.Range{Lo: 4, Hi: 4}, func(kc *lease.KeeperConfig) { kc.Schedule = sched })

	// Same millisecond, first ID of it for each generator.
	a := old.mint(1)
	b := nu.mint(1)
	if a[0] == b[0] {
		t.Errorf("machine 1 on v1 (mark %s) and machine 4 on %s both issued %d at %s: the cutover %s is before a mark reserved under the old schedule",
			time.UnixMilli(old.k.Status().MarkMs).UTC().Format(time.RFC3339Nano), text, a[0], clk.Time().Format(time.RFC3339Nano), at.Format(time.RFC3339))
	}
	checkUnique(t, old.ids, nu.ids)
}
