package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// A layout's numbers live in the keyspace of its step's index, but a change
// of the fleet schedule is judged by the layouts in force at each instant:
// a step that repeats the layout already in force ("v1,v1@X,v2@T") would
// change no instant's layout, pass SetSchedule without notice and every old
// holder's extension, yet move v2 from step 1 to step 2 — from keyspace
// 65536 to 131072 — so that a holder on the old schedule keeping v2
// machine 0 and one on the new schedule claiming v2 machine 0 (free in its
// keyspace) mint the same IDs (a reviewer's reproduction). Schedules refuse
// such a step, so two schedules that agree at every instant number their
// steps alike.
func TestRepeatedLayoutStepRefused(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	X, T := t0.Add(-2*time.Hour), t0.Add(-time.Hour)
	old := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: T, Layout: snowfence.V2()})
	if _, err := s.SetFleetSchedule(testCtx(t), 0, old.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := snowfence.NewSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: X, Layout: snowfence.V1()},
		snowfence.Step{From: T, Layout: snowfence.V2()}); !errors.Is(err, snowfence.ErrInvalidLayout) {
		t.Fatalf("NewSchedule with v1 repeated at X: %v, want ErrInvalidLayout", err)
	}
	text := "v1,v1@" + X.Format(time.RFC3339) + ",v2@" + T.Format(time.RFC3339)
	if _, err := lease.SetSchedule(testCtx(t), s, text, t0, 0); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "repeats the layout") {
		t.Fatalf("SetSchedule(%s): %v, want ErrInvalid saying the step repeats the layout", text, err)
	}
	for _, text := range []string{text, "v1,v2@" + T.Format(time.RFC3339) + ",v2@" + t0.Add(3*time.Hour).Format(time.RFC3339)} {
		if _, err := snowfence.ParseSchedule(text); !errors.Is(err, snowfence.ErrInvalidLayout) {
			t.Errorf("ParseSchedule(%s): %v, want ErrInvalidLayout", text, err)
		}
	}
}

// SetSchedule counts its notice from the highest mark it can see, so that a
// holder whose clock runs ahead of the operator's, and has reserved (and
// issued) timestamps past the operator's now + notice, keeps them under
// the layout it issued them in. After a cutover every live mark is in step
// 1's keyspace, not the store's own (step 0's), which it once listed alone
// (a reviewer's reproduction): holder F, its clock 2 h ahead, issues v2 IDs
// at t0+2h on v2 machine 0; at t0 the operator changes the fleet schedule
// back to v1 from t0+1h1m; were that taken, holder N on the new schedule
// would mint v1 machine 0 at t0+2h — the same 64 bits as F's v2 region 0
// machine 0 ID. SetSchedule reads every step's and region's keyspace and
// refuses, naming F's mark.
func TestSetScheduleSeesLaterKeyspaceMarks(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	T := t0.Add(-time.Hour)
	old := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: T, Layout: snowfence.V2()})
	if _, err := s.SetFleetSchedule(testCtx(t), 0, old.String()); err != nil {
		t.Fatal(err)
	}
	fast := fakeclock.New(t0.Add(2 * time.Hour))
	start := func(name string, sched snowfence.Schedule) (*lease.Keeper, *snowfence.Generator) {
		k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{Store: s, Holder: name, Range: &lease.Range{Lo: 0, Hi: 0},
			Schedule: sched, Clock: fast})
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
	kF, gF := start("f", old)
	(&holder{t: t, k: kF, g: gF, clk: fast}).issuing() // the claim's notice window
	idF, err := gF.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("F (clock %s): %+v issued %d", fast.Time(), kF.Status(), idF)

	T3 := t0.Add(time.Hour + time.Minute)
	next := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: T, Layout: snowfence.V2()},
		snowfence.Step{From: T3, Layout: snowfence.V1()})
	_, err = lease.SetSchedule(testCtx(t), s, next.String(), t0, 0)
	if errors.Is(err, lease.ErrInvalid) && strings.Contains(err.Error(), fmt.Sprintf("keyspace %d", lease.KeyspaceStride)) {
		return // refused: the notice counts from F's mark in step 1's keyspace
	}
	if err != nil {
		t.Fatalf("SetSchedule: %v, want ErrInvalid naming F's mark in keyspace %d", err, lease.KeyspaceStride)
	}
	kF.Close(context.Background(), leasetest.Released(gF))
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
