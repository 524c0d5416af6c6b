package explore

import (
	"context"
	"fmt"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

// mintClock is the generators' clock: the process's fake clock, except
// that a wait for a later millisecond (a tick's sequence used up, a small
// step back waited out) moves the fake clock there instead of blocking, as
// time passes while a real process mints. Keepers on the clock may wake;
// the caller settles them after the batch.
type mintClock struct{ *fakeclock.Clock }

var _ snowfence.Clock = mintClock{}

func (c mintClock) WaitUntil(ctx context.Context, wallMs int64) (snowfence.Reading, error) {
	for range 10_000 {
		r := c.Now()
		if r.WallMs >= wallMs {
			return r, nil
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
		c.Advance(time.Duration(wallMs-r.WallMs) * time.Millisecond)
	}
	return c.Now(), fmt.Errorf("explore: the fake clock did not reach %d ms", wallMs)
}
