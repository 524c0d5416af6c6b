package explore

import (
	"time"

	"github.com/snowfence/snowfence/fakeclock"
)

// ntpThreshold is the wall-clock error past which a process's clock is
// stepped back to true time, as ntpd steps a clock more than 128 ms off.
// A restore's floors assume the clocks of a fleet agree to within a skew
// budget; this keeps every clock's error below 250 ms apart from the
// explicit steps of worlds that never restore.
const ntpThreshold = 250 * time.Millisecond

// procClock is a process's fake clock and the true time it follows.
type procClock struct {
	*fakeclock.Clock
	startMs     int64         // true time at the world's start, Unix ms
	offset      time.Duration // the wall's error at the start
	trueElapsed time.Duration
}

func newProcClock(start time.Time, offset time.Duration, rate float64) *procClock {
	c := &procClock{Clock: fakeclock.New(start.Add(offset)), startMs: start.UnixMilli(), offset: offset}
	c.SetRate(rate)
	return c
}

// pass lets d of true time pass, and steps the wall back to true time
// (plus the start offset) if its error passed ntpThreshold. It returns the
// step made, if any.
func (c *procClock) pass(d time.Duration) time.Duration {
	c.Advance(d)
	c.trueElapsed += d
	want := time.UnixMilli(c.startMs).Add(c.offset + c.trueElapsed)
	err := c.Time().Sub(want)
	if err > ntpThreshold || err < -ntpThreshold {
		c.Step(-err)
		return -err
	}
	return 0
}

// trueNowMs is true time as this process follows it.
func (c *procClock) trueNowMs() int64 {
	return c.startMs + (c.offset + c.trueElapsed).Milliseconds()
}
