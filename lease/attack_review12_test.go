package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// A layout's numbers live in the keyspace of its step's index, but a change
// of the fleet schedule is judged by the layouts in force at each instant
// only: inserting a step that repeats the layout already in force changes
// no instant's layout, so SetSchedule takes it and every old holder's
// extension passes (CheckExtension), yet it moves v2 from step 1 to step 2,
// from keyspace 65536 to keyspace 131072. A holder on the old schedule
// keeps v2 machine 0 of keyspace 65536; a holder started on the new one
// claims v2 machine 0 of keyspace 131072, which is free, and both mint v2
// IDs with machine 0, region 0 at the same instant.
func TestAttackRepeatedLayoutStepMovesKeyspace(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	X := t0.Add(-2 * time.Hour)
	T := t0.Add(-time.Hour) // both cutovers are past: holders start on v2
	old := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: T, Layout: snowfence.V2()})
	if _, err := s.SetFleetSchedule(testCtx(t), 0, old.String()); err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New(t0)
	start := func(name string, sched snowfence.Schedule) (*lease.Keeper, *snowfence.Generator) {
		k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: s, Holder: name, Range: &lease.Range{Lo: 0, Hi: 0},
			Schedule: sched, Clock: clk})
		if err != nil {
			t.Fatalf("keeper %s: %v", name, err)
		}
		t.Cleanup(func() { k.Close(context.Background()) })
		g, err := snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
		if err != nil {
			t.Fatal(err)
		}
		k.SetLastIssued(g.LastIssued)
		return k, g
	}
	kA, gA := start("a", old)
	idA, err := gA.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	// The operator inserts a step that repeats v1: no instant changes
	// layout, so no notice is needed and SetSchedule takes it.
	next := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: X, Layout: snowfence.V1()},
		snowfence.Step{From: T, Layout: snowfence.V2()})
	if _, err := lease.SetSchedule(testCtx(t), s, next.String(), clk.Time(), 0); err != nil {
		t.Skipf("SetSchedule refuses the repeated step (%v): this path is closed", err)
	}
	kB, gB := start("b", next)

	// A renews on: its schedule and the fleet's agree at every instant.
	clk.Advance(2 * time.Second)
	if err := clk.BlockUntilWaiters(testCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
	idA2, errA := gA.Next(context.Background())
	idB, errB := gB.Next(context.Background())
	t.Logf("A %+v: %d then %d (%v); B %+v: %d (%v)", kA.Status(), idA, idA2, errA, kB.Status(), idB, errB)
	if errA == nil && errB == nil && idA2 == idB {
		dec, _ := next.Decode(idB)
		t.Fatalf("holders a (schedule %s) and b (schedule %s) both issued %d (%+v)", old, next, idB, dec)
	}
	if errA == nil && errB == nil {
		dA, _ := next.Decode(idA2)
		dB, _ := next.Decode(idB)
		if dA.Machine == dB.Machine && dA.Region == dB.Region && dA.Layout == dB.Layout {
			t.Fatalf("holders a and b both mint v2 machine %d region %v at once: a %+v, b %+v", dA.Machine, dA.Region, dA, dB)
		}
	}
}

// SetSchedule counts its notice from the highest mark it can see, so that a
// holder whose clock runs ahead of the operator's, and has reserved (and
// issued) timestamps past the operator's now + notice, keeps them under
// the layout it issued them in. But it lists only the store's own keyspace
// (step 0's), and after a cutover every live mark is in step 1's keyspace:
// holder F, its clock 2 h ahead, issues v2 IDs at t0+2h on v2 machine 0;
// at t0 the operator changes the fleet schedule back to v1 from t0+1h1m,
// which SetSchedule takes; holder N on the new schedule then mints v1
// machine 0 at t0+2h — the same 64 bits as F's v2 region 0 machine 0 ID
// (both layouts put timestamp 0 bits below the same 41-bit timestamp).
func TestAttackSetScheduleIgnoresLaterKeyspaceMarks(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	T := t0.Add(-time.Hour)
	old := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: T, Layout: snowfence.V2()})
	if _, err := s.SetFleetSchedule(testCtx(t), 0, old.String()); err != nil {
		t.Fatal(err)
	}
	fast := fakeclock.New(t0.Add(2 * time.Hour))
	start := func(name string, sched snowfence.Schedule) (*lease.Keeper, *snowfence.Generator) {
		k, err := lease.StartKeeper(testCtx(t), lease.KeeperConfig{Store: s, Holder: name, Range: &lease.Range{Lo: 0, Hi: 0},
			Schedule: sched, Clock: fast})
		if err != nil {
			t.Fatalf("keeper %s: %v", name, err)
		}
		t.Cleanup(func() { k.Close(context.Background()) })
		g, err := snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
		if err != nil {
			t.Fatal(err)
		}
		k.SetLastIssued(g.LastIssued)
		return k, g
	}
	kF, gF := start("f", old)
	idF, err := gF.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("F (clock %s): %+v issued %d", fast.Time(), kF.Status(), idF)

	T3 := t0.Add(time.Hour + time.Minute)
	next := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: T, Layout: snowfence.V2()},
		snowfence.Step{From: T3, Layout: snowfence.V1()})
	if _, err := lease.SetSchedule(testCtx(t), s, next.String(), t0, 0); err != nil {
		t.Skipf("SetSchedule refuses (%v): this path is closed", err)
	}
	kF.Close(context.Background())
	kN, gN := start("n", next)
	idN, err := gN.Next(context.Background())
	if err != nil {
		t.Fatalf("N: %v", err)
	}
	t.Logf("N: %+v issued %d", kN.Status(), idN)
	if idN == idF {
		dF, _ := old.Decode(idF)
		dN, _ := next.Decode(idN)
		t.Fatalf("F (schedule %s) issued %d as %+v before the change; N (schedule %s) issued it again as %+v: SetSchedule took a cutover below F's mark in keyspace %d",
			old, idF, dF, next, dN, lease.KeyspaceStride)
	}
	t.Fatalf("SetSchedule took a change at %s, below F's mark %s in step 1's keyspace (IDs %d, %d)", T3, lease.FormatMs(kF.Status().MarkMs), idF, idN)
}
