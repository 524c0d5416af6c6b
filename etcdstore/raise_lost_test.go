package etcdstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestRaiseMarksNamedInLoss: a holder fenced by the operator's raise-marks
// is told so at its next renewal — not that its owner key is "gone" (an
// expiry, a revoke, a release), which sends the operator looking for a
// partition. Number 0's holder reserved less than the raise, number 1's
// more (its mark is kept, and still the raise names itself). Control:
// number 2 was raised before its claim, and its owner key deleted by other
// means after it: the loss must not blame raise-marks.
func TestRaiseMarksNamedInLoss(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	s := newStore(t, cli, etcdstore.Config{})
	op := newStore(t, cli, etcdstore.Config{}) // the same prefix: the test's
	now := baseMs()
	raised := now + time.Minute.Milliseconds()
	if _, err := op.RaiseMarks(ctxFor(t), lease.Range{Lo: 2, Hi: 2}, now+1000); err != nil {
		t.Fatal(err)
	}
	low := mustExtend(t, s, leasetest.MustClaim(t, s, req("low", 0, 0, now)), now+1000)
	high := mustExtend(t, s, leasetest.MustClaim(t, s, req("high", 1, 1, now)), raised+time.Hour.Milliseconds())
	early := leasetest.MustClaim(t, s, req("early", 2, 2, now+1000))
	if _, err := op.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 1}, raised); err != nil {
		t.Fatal(err)
	}
	for _, l := range []*lease.Lease{low, high} {
		_, err := s.Extend(ctxFor(t), l, l.MarkMs+1000, 10*time.Second)
		if !errors.Is(err, lease.ErrLost) || !strings.Contains(err.Error(), "raise-marks") {
			t.Errorf("Extend of machine %d after raise-marks: %v; want ErrLost naming the operator's raise-marks", l.Machine, err)
		}
	}
	if rec := leasetest.MustGet(t, op, 1); rec.MarkMs != high.MarkMs {
		t.Errorf("machine 1's mark after raise-marks = %d, want its holder's higher %d kept", rec.MarkMs, high.MarkMs)
	}
	rk, err := s.RawKey(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctxFor(t), rk.Keys[0]); err != nil { // the owner key: as if its etcd lease expired
		t.Fatal(err)
	}
	_, err = s.Extend(ctxFor(t), early, now+2000, 10*time.Second)
	if !errors.Is(err, lease.ErrLost) || strings.Contains(err.Error(), "raise-marks") {
		t.Errorf("Extend of machine 2 after its owner key vanished (raised before its claim): %v; want ErrLost not blaming raise-marks", err)
	}
}
