package zkstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
)

// TestRestartIsNoRestore: an ensemble stopped and started again, or
// killed (SIGKILL) and started again, on its own data is no restore: the
// store notices none (no ErrRestored on its lease, no floor on its next
// claim), though it compares every record, znode version and the region's
// children with what it saw before.
func TestRestartIsNoRestore(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 3)
	s := open(t, e, newPath(t))
	nowMs := time.Now().UnixMilli()
	l := mustClaim(t, s, req("a", 0, 0, nowMs))
	var err error
	if l, err = s.Extend(t.Context(), l, nowMs+10_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, req("b", 1, 1, nowMs))
	for i, restart := range []func(){
		func() { e.StopAll(); e.StartAll() },
		func() {
			for j := range e.N() {
				e.Kill(j)
			}
			e.StartAll()
		},
	} {
		restart()
		if err := settle(t, func(ctx context.Context) error {
			var err error
			l, err = s.Extend(ctx, l, l.MarkMs+1000, 10*time.Second)
			return err
		}); err != nil {
			t.Fatalf("restart %d: renewal after the ensemble came back: %v", i, err)
		}
		at := time.Now().UnixMilli()
		c := mustClaim(t, s, req("c", 2+i, 2+i, at))
		if c.StartMs >= at+time.Minute.Milliseconds() {
			t.Errorf("restart %d: claim starts at %d, a restore window ahead of its clock %d: the restart was taken for a restore", i, c.StartMs, at)
		}
	}
}
