package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// A keeper that has no number for the new layout at a cutover must refuse,
// not go on with its old number: keeper D holds v1 machine 7 and cannot get
// its only v2 number (9, held by another claim); keeper E holds v1 machine
// 8 and v2 machine 7. At T, E mints v2 IDs on machine 7. Were D to go on
// with machine 7 (it fits v2's 9 bits), it would mint E's IDs: the
// snowfence_revert_cutover build does that, and this test then fails with
// the ID both issued.
func TestCutoverWithoutNextNumberRefuses(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	T := t0.Add(time.Minute)
	sched := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: T, Layout: snowfence.V2()})
	if _, err := s.SetFleetSchedule(testCtx(t), 0, sched.String()); err != nil {
		t.Fatal(err)
	}
	idx, err := lease.KeyspaceOf(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	v2store, err := s.Keyspace(idx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v2store.Claim(testCtx(t), lease.ClaimRequest{Holder: "blocker", Range: lease.Range{Lo: 9, Hi: 9}, NowMs: t0.UnixMilli(),
		LeaseFor: time.Hour, MaxAhead: time.Hour, Schedule: sched.String()}); err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New(t0)
	start := func(name string, v1, v2 int) (*lease.Keeper, *snowfence.Generator) {
		k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{Store: s, Holder: name, Range: &lease.Range{Lo: v1, Hi: v1},
			LayoutRanges: map[string]lease.Range{"v2": {Lo: v2, Hi: v2}}, Schedule: sched, Clock: clk, MaxWait: 2 * time.Second})
		if err != nil {
			t.Fatalf("keeper %s: %v", name, err)
		}
		var g *snowfence.Generator
		t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
		g, err = snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
		if err != nil {
			t.Fatal(err)
		}
		return k, g
	}
	kD, gD := start("d", 7, 9)
	kE, gE := start("e", 8, 7)
	for clk.Time().Before(T) {
		if err := clk.BlockUntilWaiters(testCtx(t), 2); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if err := clk.BlockUntilWaiters(testCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	idE, err := gE.Next(context.Background())
	if err != nil {
		t.Fatalf("E at T: %v (status %+v)", err, kE.Status())
	}
	if d, _ := sched.Decode(idE); d.Layout != "v2" || d.Machine != 7 {
		t.Fatalf("E's ID at T decodes to %+v, want v2 machine 7", d)
	}
	idD, err := gD.Next(context.Background())
	switch {
	case err == nil && idD == idE:
		t.Fatalf("D, without a v2 number, issued %d at T on its v1 machine 7: the ID E issued on v2 machine 7", idD)
	case err == nil:
		t.Fatalf("D, without a v2 number, issued %d at T (%+v)", idD, kD.Status())
	case !errors.Is(err, snowfence.ErrFenced) || !strings.Contains(err.Error(), "layout v2"):
		t.Fatalf("D at T: %v, want ErrFenced saying no number for layout v2 is held", err)
	}
	if st := kD.Status(); st.Layout != "v2" || st.State != lease.StateClaiming || !strings.Contains(st.LastError, lease.ErrNoFreeNumber.Error()) {
		t.Errorf("D's status at T: %+v, want its v2 number claiming after ErrNoFreeNumber", st)
	}
}

// A cutover keeper's own refusals: a lead too short to retry a claim, and a
// range for a layout the schedule does not have.
func TestKeeperCutoverConfig(t *testing.T) {
	sched := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: t0.Add(time.Hour), Layout: snowfence.V2()})
	base := lease.KeeperConfig{Store: windowStore{max: etcdstore.MaxRestoreWindow}, Holder: "a", Schedule: sched, Clock: fakeclock.New(t0)}
	c, err := lease.Defaults(base)
	if err != nil || c.Lead != 10*time.Minute {
		t.Fatalf("default lead: %s, %v; want 10m0s", c.Lead, err)
	}
	short := base
	short.Lead = 19 * time.Second
	if _, err := lease.Defaults(short); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "Lead 19s") {
		t.Errorf("lead 19 s with a 10 s lease: %v, want ErrInvalid", err)
	}
	typo := base
	typo.LayoutRanges = map[string]lease.Range{"v3": {Lo: 0, Hi: 1}}
	if _, err := lease.Defaults(typo); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), `"v3"`) {
		t.Errorf("a range for layout v3: %v, want ErrInvalid", err)
	}
}

// TestClockStepAcrossCutover: a holder whose clock steps forward across a
// cutover, then back, never mints on the v1 number it retired, which another
// holder claimed meanwhile. The fleet schedule is v1,v2@T. A holds v1 machine
// 7 and, from its lead window on, v2 machine 3. At T − 20 s A's wall clock is
// stepped 25 s forward, across T: at its next turn A's keeper retires v1
// machine 7, releasing it with the end of A's last v1 ID as its mark, and once
// a v2 renewal is sent after the step A mints v2 IDs stamped past T. C, on a
// correct clock, then claims v1 machine 7 and mints v1 IDs up to T on it; A's
// clock is stepped back 25 s, below T again, and must not mint on v1 machine 7
// (its hold is retired). Both run on past T (C on v2 machine 4). Real etcd,
// fake clocks.
func TestClockStepAcrossCutover(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	T := t0.Add(2 * time.Minute)
	sched := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: T, Layout: snowfence.V2()})
	if _, err := s.SetFleetSchedule(testCtx(t), 0, sched.String()); err != nil {
		t.Fatal(err)
	}
	cut := func(v2 int) func(*lease.KeeperConfig) {
		return func(kc *lease.KeeperConfig) {
			kc.Schedule, kc.Lead = sched, 30*time.Second
			kc.LayoutRanges = map[string]lease.Range{"v2": {Lo: v2, Hi: v2}}
		}
	}
	clkA := fakeclock.New(t0)
	a := mustHolder(t, s, clkA, "a", lease.Range{Lo: 7, Hi: 7}, cut(3))
	for clkA.Time().Before(T.Add(-20 * time.Second)) {
		tryMint(a, 100)
		a.step(250 * time.Millisecond)
	}
	const step = 25 * time.Second
	clkA.Step(step)
	var aV2 int
	for range 12 { // 3 s: A's keeper retires v1 7, renews v2 3
		aV2 += tryMint(a, 100)
		a.step(250 * time.Millisecond)
	}
	if st := a.k.Status(); st.Layout != "v2" || st.Machine != 3 {
		t.Fatalf("A after the step across T: %+v, want v2 machine 3", st)
	}
	clkC := fakeclock.New(clkA.Time().Add(-step))
	cH := mustHolder(t, s, clkC, "c", lease.Range{Lo: 7, Hi: 7}, cut(4))
	clkA.Step(-step)
	var aBack, cN int
	for range 120 { // 30 s, across T
		aBack += tryMint(a, 100)
		cN += tryMint(cH, 100)
		a.step(250 * time.Millisecond)
		cH.step(250 * time.Millisecond)
	}
	t.Logf("A minted %d v2 IDs while ahead, %d after the step back (refusals %v); C minted %d once issuing",
		aV2, aBack, a.g.Stats().Refused, cN)
	if aV2 == 0 || cN == 0 {
		t.Errorf("A minted %d v2 IDs while ahead, C %d: the story needs both", aV2, cN)
	}
	v1C := 0
	for _, id := range cH.ids {
		if d, _ := sched.Decode(id); d.Layout == "v1" && d.Machine == 7 {
			v1C++
		}
	}
	if v1C == 0 {
		t.Errorf("C minted no v1 ID on machine 7 below T")
	}
	checkUnique(t, a.ids, cH.ids)
}
