package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// TestScheduleRefusedInsideTheClaim: the comparison with the fleet
// schedule is part of the claim statement itself, so a schedule set
// between a claimer's read and its write still refuses it: run on its
// own, the statement of a claimer on v1 claims nothing once the fleet is
// on another schedule, and Claim says ErrSchedule without writing a row.
// Extend of a lease claimed under v1 is refused too, and the schedule is
// stored canonical and compared-and-set on its version.
func TestScheduleRefusedInsideTheClaim(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s, other := openStore(t, pool, table), openStore(t, pool, table)
	nowMs := time.Now().UnixMilli()
	req := lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 9, Hi: 9}, NowMs: nowMs, LeaseFor: 10 * time.Second}
	old, err := s.Claim(t.Context(), lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 8, Hi: 8}, NowMs: nowMs, LeaseFor: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	const next = "v1,v2@2036-01-01T00:00:00Z"
	if _, err := other.SetFleetSchedule(t.Context(), 0, "no such schedule"); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("SetFleetSchedule of an unparsable schedule: %v, want ErrInvalid", err)
	}
	set, err := other.SetFleetSchedule(t.Context(), 0, next)
	if err != nil || set.Version != 1 {
		t.Fatalf("SetFleetSchedule(0, %q) = %+v, %v", next, set, err)
	}
	if _, err := other.SetFleetSchedule(t.Context(), 0, next); !errors.Is(err, lease.ErrConflict) {
		t.Errorf("second SetFleetSchedule from version 0: %v, want ErrConflict", err)
	}

	stmt, args := s.ClaimStatement(req, 9, lease.NewNonce())
	var epoch *int64
	var rest [5]any
	if err := pool.QueryRow(t.Context(), stmt, args...).Scan(&epoch, &rest[0], &rest[1], &rest[2], &rest[3], &rest[4], new(any), new(bool), new(string)); err != nil {
		t.Fatal(err)
	}
	if epoch != nil {
		t.Fatalf("the claim statement of a v1 claimer claimed number 9 (epoch %d) while the fleet is on %q", *epoch, next)
	}
	if _, err := s.Claim(t.Context(), req); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("Claim on v1 while the fleet is on %q: %v, want ErrSchedule", next, err)
	}
	if rec := mustGetRec(t, s, 9); rec.Held() || rec.Token != 0 {
		t.Errorf("number 9 after the refused claims: %+v, want untouched", rec)
	}
	past := time.Date(2036, 1, 1, 0, 0, 1, 0, time.UTC).UnixMilli()
	if _, err := s.Extend(t.Context(), old, past, 10*time.Second); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("Extend past the cutover of a lease claimed on v1 after the fleet moved: %v, want ErrSchedule", err)
	}
	if _, err := s.Extend(t.Context(), old, nowMs+20000, 10*time.Second); err != nil {
		t.Errorf("Extend below the cutover, where v1 and %q agree: %v", next, err)
	}
	req.Schedule = next
	l, err := s.Claim(t.Context(), req)
	if err != nil || l.Schedule != next {
		t.Fatalf("Claim on the fleet's schedule = %v, %v", l, err)
	}
	if _, err := s.Extend(t.Context(), l, nowMs+20000, 10*time.Second); err != nil {
		t.Errorf("Extend on the fleet's schedule: %v", err)
	}
}
