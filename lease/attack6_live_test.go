package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// aheadClock is a caller's clock: the keeper's, with its wall clock read
// ahead by a constant (a clock corrected from another time source, say);
// its monotonic reading is the keeper's, so snowfence.New's check of the
// monotonic clocks passes.
type aheadClock struct {
	*fakeclock.Clock
	ahead time.Duration
}

func (c aheadClock) Now() snowfence.Reading {
	r := c.Clock.Now()
	r.WallMs += c.ahead.Milliseconds()
	return r
}

func (c aheadClock) WaitUntil(ctx context.Context, wallMs int64) (snowfence.Reading, error) {
	r, err := c.Clock.WaitUntil(ctx, wallMs-c.ahead.Milliseconds())
	r.WallMs += c.ahead.Milliseconds()
	return r, err
}

// TestAttack6GeneratorWallAheadOfKeeper: liveness. snowfence.New checks
// only that Config.Clock's monotonic reading is the keeper's; a Config.Clock
// whose wall clock reads more than 100 ms ahead of the keeper's is accepted,
// and then every request is refused (clock-jumped) for ever: every grant
// carries the keeper's wall reading, which the generator's runs ahead of by
// the offset, renewal after renewal. The refusal says "issuing resumes after
// the next renewal", which never comes true. Expected of the standards: such
// a configuration refused at start (like checkSameMono) or working. Entry
// point snowfence.New on a keeper; etcd windows. Control: 3 ms ahead
// (within the 5 ms New allows). New now refuses the 150 ms clock.
func TestAttack6GeneratorWallAheadOfKeeper(t *testing.T) {
	for _, c := range []struct {
		name  string
		ahead time.Duration
	}{{"150 ms ahead", 150 * time.Millisecond}, {"control: 3 ms ahead", 3 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			s := &stubStore{machine: 7}
			clk := fakeclock.New(t0)
			a, err := startHolderGen(t, s, clk, "a", lease.Range{Lo: 7, Hi: 7},
				func(gc *snowfence.Config) { gc.Clock = aheadClock{clk, c.ahead} }, attack4Timings(false))
			if err != nil {
				t.Logf("held: New refused the clock: %v", err)
				return
			}
			for range 40 { // past the claim's notice window
				a.step(250 * time.Millisecond)
			}
			var ok, jumped int
			var last error
			for range 240 { // 60 s, 30 renewals
				ids, err := a.g.NextN(context.Background(), 1)
				var fe *snowfence.FencedError
				switch {
				case err == nil:
					ok += len(ids)
				case errors.As(err, &fe) && fe.Reason == "clock-jumped":
					jumped++
					last = err
				default:
					last = err
				}
				a.step(250 * time.Millisecond)
			}
			t.Logf("60 s of requests every 250 ms: %d issued, %d refused clock-jumped; last error: %v", ok, jumped, last)
			if ok == 0 {
				t.Errorf("liveness: New accepted a generator clock %s ahead of the keeper's wall clock, and it never issues (%d refusals in 60 s of acknowledged renewals every 2 s)",
					c.ahead, jumped)
			}
		})
	}
}
