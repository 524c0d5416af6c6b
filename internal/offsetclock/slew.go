package offsetclock

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence"
)

// ErrSlewTooFast means a slew that would change the offset by as much as
// the time it takes or more: the clock would stop, run backwards, or run at
// more than twice its rate. Smears and NTP slews change it by a small
// fraction of that.
var ErrSlewTooFast = errors.New("offsetclock: slew as large as its duration")

// slew is a change of the offset spread evenly over a stretch of the
// monotonic clock: the offset starts at the state's offMs at monotonic time
// from and reaches offMs+byNs at until, and stays there.
type slew struct {
	from, until time.Duration
	byNs        int64
	// hw is the highest wall reading returned, in milliseconds: readings
	// never fall below it, since the base wall clock and the slewed offset
	// each round down to their millisecond at different instants, and a
	// slewed clock must never read backwards.
	hw atomic.Int64
}

// Slew changes the offset by d spread evenly over the next over of the
// monotonic clock, as chrony or a cloud provider's leap smear slews a
// clock instead of stepping it: with d = -1 s and over = 24 h the wall
// clock runs 1/86,400 slower for a day. Slewed readings never fall below
// an earlier one. A Step or SetOffset ends the slew where it has got to;
// a new Slew starts from there too. Slew reports ErrSlewTooFast unless
// |d| < over, and over must be positive.
func (c *Clock) Slew(d, over time.Duration) error {
	if over <= 0 || d.Abs() >= over {
		return fmt.Errorf("%w: %v over %v", ErrSlewTooFast, d, over)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.base.Now().Mono
	old := c.st.Load()
	st := newState(old.offsetMs(now))
	st.slew = &slew{from: now, until: now + over, byNs: int64(d)}
	st.slew.hw.Store(math.MinInt64)
	c.st.Store(st)
	old.cancel()
	return nil
}

// offsetNs is the state's offset at monotonic time mono, in nanoseconds.
func (st *state) offsetNs(mono time.Duration) int64 {
	off := st.offMs * int64(time.Millisecond)
	s := st.slew
	if s == nil || mono <= s.from {
		return off
	}
	if mono >= s.until {
		return off + s.byNs
	}
	return off + int64(float64(s.byNs)*float64(mono-s.from)/float64(s.until-s.from))
}

// offsetMs is offsetNs rounded down to the millisecond.
func (st *state) offsetMs(mono time.Duration) int64 {
	ns := st.offsetNs(mono)
	ms := ns / int64(time.Millisecond)
	if ns%int64(time.Millisecond) < 0 {
		ms--
	}
	return ms
}

// read shifts a base reading by the state's offset; a slewed state never
// returns a wall reading below one it returned before.
func (st *state) read(r snowfence.Reading) snowfence.Reading {
	r.WallMs += st.offsetMs(r.Mono)
	s := st.slew
	if s == nil {
		return r
	}
	for {
		hw := s.hw.Load()
		if r.WallMs <= hw {
			r.WallMs = hw
			return r
		}
		if s.hw.CompareAndSwap(hw, r.WallMs) {
			return r
		}
	}
}
