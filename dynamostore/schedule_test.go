package dynamostore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestScheduleItemBesideLeases: the fleet schedule's item shares the table
// with every region's leases without being one: List, RaiseMarks over the
// region's first numbers and claims over the whole range never see or
// touch it (its machine_id, -1, is below every region's), and it holds
// across them.
func TestScheduleItemBesideLeases(t *testing.T) {
	const sched = "v1,v2@2036-01-01T00:00:00Z"
	s := newStore(t)
	s1 := connect(t, s.Table(), 1)
	set, err := s.SetFleetSchedule(ctxFor(t), 0, sched)
	if err != nil {
		t.Fatal(err)
	}
	now := baseMs()
	r := req("a", 0, 1023, now)
	r.Schedule = sched
	l := leasetest.MustClaim(t, s1, r)
	if l.Schedule != sched {
		t.Fatalf("lease %+v, want schedule %q", l, sched)
	}
	for _, st := range []lease.Admin{s, s1} {
		recs, err := st.List(ctxFor(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.Machine < 0 || rec.Machine >= 1024 {
				t.Fatalf("List shows %+v", rec)
			}
		}
		if n, err := st.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 15}, now+1000); err != nil || n < 16 {
			t.Fatalf("RaiseMarks over 0-15 = %d, %v; want all 16 numbers", n, err)
		}
	}
	if fs, err := s1.FleetSchedule(ctxFor(t)); err != nil || fs != set {
		t.Fatalf("fleet schedule after List, claims and RaiseMarks: %+v, %v; want %+v", fs, err, set)
	}
	if _, err := s.SetFleetSchedule(ctxFor(t), 0, "v1"); !errors.Is(err, lease.ErrConflict) {
		t.Fatalf("SetFleetSchedule from version 0 again: %v, want ErrConflict", err)
	}
}

// TestExtendRefusedAfterScheduleChange: a lease on the default schedule is
// refused an extension past the cutover once lease.SetSchedule moved the
// fleet on, and the refused extension leaves the mark alone; below the
// cutover, where the two schedules agree, it still renews.
func TestExtendRefusedAfterScheduleChange(t *testing.T) {
	s := newStore(t)
	now := baseMs()
	l := leasetest.MustClaim(t, s, req("a", 1, 1, now))
	if _, err := lease.SetSchedule(ctxFor(t), s, "v1,v2@2036-01-01T00:00:00Z", time.UnixMilli(now), 0); err != nil {
		t.Fatal(err)
	}
	past := time.Date(2036, 1, 1, 0, 0, 1, 0, time.UTC).UnixMilli()
	if _, err := s.Extend(ctxFor(t), l, past, 0); !errors.Is(err, lease.ErrSchedule) {
		t.Fatalf("extension past the cutover after the fleet schedule changed: %v, want ErrSchedule", err)
	}
	if rec := leasetest.MustGet(t, s, 1); rec.MarkMs != l.MarkMs {
		t.Fatalf("refused extension moved the mark: %+v", rec)
	}
	if _, err := s.Extend(ctxFor(t), l, now+20_000, 0); err != nil {
		t.Fatalf("extension below the cutover, where the schedules agree: %v", err)
	}
}
