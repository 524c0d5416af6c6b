package lease_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// TestAttack7StepAcrossCutover (attack 7, path 1): the fleet schedule is
// v1,v2@T. A holds v1 machine 7 and, from its lead window on, v2 machine 3.
// At T − 20 s A's wall clock is stepped 25 s forward, across T: at its next
// turn A's keeper retires v1 machine 7, releasing it with the end of A's
// last v1 ID as its mark, and once a v2 renewal is sent after the step A
// mints v2 IDs stamped past T. C, on a correct clock, then claims v1
// machine 7 and mints v1 IDs up to T on it; A's clock is stepped back 25 s,
// below T again, and must not mint on v1 machine 7 (its hold is retired).
// Both run on past T (C on v2 machine 4). Real etcd, fake clocks.
func TestAttack7StepAcrossCutover(t *testing.T) {
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
		t.Errorf("A minted %d v2 IDs while ahead, C %d: the attack needs both", aV2, cN)
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
