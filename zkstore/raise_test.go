package zkstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestRaiseMarksAfterRestore plays the runbook's step after a restore of
// the ensemble from a cold copy (docs/runbook.md): A renewed after the
// copy, up to a mark the restore takes away, and its claim survives in
// the restored data. The operator, on a store that saw nothing before,
// raises every mark past the last ID issued: A's next renewal fails
// (ErrLost, or ErrRestored if its store sees the record went back), the
// next claim of A's number starts at or above the raised mark, and A's
// journal entry ends raised at the mark the restored record held.
func TestRaiseMarksAfterRestore(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	as := open(t, e, path)
	nowMs := time.Now().UnixMilli()
	a := mustClaim(t, as, req("a", 1, 1, nowMs))
	a = leasetest.MustExtend(t, as, a, nowMs+10_000, 10*time.Second)
	restoredMark := a.MarkMs
	cp := coldCopy(e)
	if err := settle(t, func(ctx context.Context) error {
		var err error
		a, err = as.Extend(ctx, a, nowMs+60_000, 10*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	restoreAndPump(t, e, cp, path)

	op := open(t, e, path)
	raised := a.MarkMs + 1000
	var n int
	if err := settle(t, func(ctx context.Context) error {
		var err error
		n, err = op.RaiseMarks(ctx, lease.Range{Lo: 0, Hi: 3}, raised)
		return err
	}); err != nil || n != 4 {
		t.Fatalf("RaiseMarks(0-3) after the restore = %d, %v; want 4, nil", n, err)
	}
	if err := settle(t, func(ctx context.Context) error {
		_, err := as.Extend(ctx, a, nowMs+70_000, 10*time.Second)
		return err
	}); !errors.Is(err, lease.ErrLost) && !errors.Is(err, lease.ErrRestored) {
		t.Errorf("A's renewal after the restore and the raise: %v, want ErrLost or ErrRestored", err)
	}
	if l := mustClaim(t, op, req("next", 1, 1, time.Now().UnixMilli())); l.StartMs < raised {
		t.Errorf("claim of A's number after the raise starts at %d, below the raised mark %d", l.StartMs, raised)
	}
	h := leasetest.MustHistory(t, op, 1)
	if len(h) != 2 || h[0].Token != a.Token || h[0].End != lease.EndRaised || h[0].EndMs != restoredMark {
		t.Errorf("History(1) = %+v; want A's entry ended raised at the restored mark %d, and the next claim's", h, restoredMark)
	}
}
