package pgstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// TestRaiseMarksFencesEveryHolder: after a restore from an old backup, a
// claim that survived in the restored store must not extend again below
// timestamps already issued. RaiseMarks, in one statement, clears the
// holder and bumps the epoch of every held row of the range (so each
// holder's next Extend fails with ErrLost, saying raise-marks fenced it),
// leaves quarantined rows quarantined, and the holders' next claims start
// at or above the raised mark. A keeper fenced this way claims again and
// starts above the mark.
func TestRaiseMarksFencesEveryHolder(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	s := openStore(t, pool, table)
	clk := fakeclock.New(at(0))
	k, _ := traceKeeper(t, s, clk, "keeper") // holds 37
	nowMs := clk.Now().WallMs
	claim := func(holder string, n int) *lease.Lease {
		t.Helper()
		l, err := s.Claim(t.Context(), lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: n, Hi: n}, NowMs: nowMs,
			LeaseFor: 30 * time.Second, MaxAhead: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := claim("a", 30), claim("b", 31)
	if err := s.Quarantine(t.Context(), 32); err != nil {
		t.Fatal(err)
	}
	raised := nowMs + 60*1000 // within the keeper's MaxWait (2 min)
	n, err := s.RaiseMarks(t.Context(), lease.Range{Lo: 30, Hi: 40}, raised)
	if err != nil || n != 11 {
		t.Fatalf("RaiseMarks(30-40) = %d, %v; want 11 (every number: the quarantined 32 keeps a lower mark for after it)", n, err)
	}
	for _, l := range []*lease.Lease{a, b} {
		_, err := s.Extend(t.Context(), l, nowMs+1000, 30*time.Second)
		if !errors.Is(err, lease.ErrLost) || !strings.Contains(err.Error(), "raise-marks") {
			t.Errorf("Extend of %s's lease after RaiseMarks: %v, want ErrLost naming raise-marks", l.Holder, err)
		}
	}
	if rec := mustGetRec(t, s, 32); !rec.Quarantined {
		t.Errorf("quarantined number after RaiseMarks: %+v, want still quarantined", rec)
	}
	if l := claim("a", 30); l.StartMs < raised {
		t.Errorf("a's claim again starts at %d, want ≥ the raised mark %d", l.StartMs, raised)
	}

	// The keeper's next renewal fails; it claims again and starts above
	// the mark (waiting for it: the mark is more than MaxAhead ahead).
	before := k.Lease()
	clk.Advance(10 * time.Second)
	settle(t, clk)
	after := k.Lease()
	if after == nil {
		t.Fatalf("keeper after RaiseMarks holds nothing: %+v", k.Status())
	}
	if st := k.Status(); st.Losses == 0 || after.Token == before.Token || after.StartMs < raised {
		t.Errorf("keeper after RaiseMarks: status %+v, lease %v starting %d; want it lost and claimed again from ≥ %d", st, after, after.StartMs, raised)
	}
}
