package offsetclock

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence"
)

// MaxOffset bounds the offset either way: SetOffset and Step clamp to
// ±MaxOffset, and the handler refuses larger values. A century is far beyond
// any useful fault and keeps every sum in range of an int64 of milliseconds
// and of a time.Duration.
const MaxOffset = 100 * 365 * 24 * time.Hour

const maxOffsetMs = int64(MaxOffset / time.Millisecond)

// Clock wraps a snowfence.Clock and adds a settable offset to its wall
// readings — never to the monotonic ones: a wall-clock step, as NTP or an
// operator makes one. The zero value is not usable; call New.
//
// A Clock is safe for concurrent use; the offset is an atomic, so Now stays
// cheap.
type Clock struct {
	base snowfence.Clock
	// mu serialises writers; readers only load st.
	mu sync.Mutex
	st atomic.Pointer[state]
}

// state is one offset value, or one slew (see Slew). Each change installs
// a new state and cancels the old one's context, so waiters notice the
// change.
type state struct {
	offMs int64
	slew  *slew // nil: a fixed offset
	// replaced is done once this state is no longer current.
	replaced context.Context
	cancel   context.CancelFunc
}

var _ snowfence.Clock = (*Clock)(nil)

// New returns a Clock that reads base with a zero offset.
func New(base snowfence.Clock) *Clock {
	c := &Clock{base: base}
	c.st.Store(newState(0))
	return c
}

func newState(offMs int64) *state {
	ctx, cancel := context.WithCancel(context.Background())
	return &state{offMs: offMs, replaced: ctx, cancel: cancel}
}

// Offset returns the offset added to the base clock's wall readings now
// (during a slew, how far it has got).
func (c *Clock) Offset() time.Duration {
	return time.Duration(c.st.Load().offsetMs(c.base.Now().Mono)) * time.Millisecond
}

// SetOffset sets the offset to d, truncated toward zero to whole
// milliseconds and clamped to ±MaxOffset. Negative is behind the base clock.
func (c *Clock) SetOffset(d time.Duration) {
	c.setMs(func(int64) int64 { return clampMs(int64(d / time.Millisecond)) })
}

// Step adds d, truncated toward zero to whole milliseconds, to the offset and
// returns the new offset, clamped to ±MaxOffset. A negative d steps the wall
// clock back. SetOffset and Step end a slew where it has got to.
func (c *Clock) Step(d time.Duration) time.Duration {
	ms := c.setMs(func(cur int64) int64 { return clampMs(cur + clampMs(int64(d/time.Millisecond))) })
	return time.Duration(ms) * time.Millisecond
}

// setMs installs the offset next(current) and wakes the waiters of the old
// one. It returns the new offset in milliseconds.
func (c *Clock) setMs(next func(cur int64) int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.st.Load()
	st := newState(next(old.offsetMs(c.base.Now().Mono)))
	c.st.Store(st)
	old.cancel()
	return st.offMs
}

func clampMs(ms int64) int64 {
	return max(-maxOffsetMs, min(ms, maxOffsetMs))
}

// Now reads the base clock and adds the offset to the wall reading; the
// monotonic reading is the base clock's.
func (c *Clock) Now() snowfence.Reading {
	return c.st.Load().read(c.base.Now())
}

// WaitUntil returns the first reading whose offset wall clock is at least
// wallMs, or ctx's error. It waits on the base clock for wallMs minus the
// offset; if the offset changes meanwhile it stops that wait, checks again
// with the new offset and waits again if need be, so a step forward ends the
// wait at once and a step back prolongs it.
func (c *Clock) WaitUntil(ctx context.Context, wallMs int64) (snowfence.Reading, error) {
	for {
		st := c.st.Load()
		r := st.read(c.base.Now())
		if r.WallMs >= wallMs {
			return r, nil
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
		r, err := c.waitOnce(ctx, st, wallMs)
		if ctx.Err() != nil {
			return c.Now(), ctx.Err()
		}
		if err == nil && r.WallMs >= wallMs {
			return r, nil
		}
		// The offset changed during the wait (err is the cancellation
		// that said so), or after it and the target moved away, or a slew
		// held the clock back while the base clock ran: look again.
	}
}

// waitOnce waits on the base clock for wallMs under offset st, ending early
// when st is replaced. It returns the base reading shifted by the offset
// current on return.
func (c *Clock) waitOnce(ctx context.Context, st *state, wallMs int64) (snowfence.Reading, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(st.replaced, cancel)
	defer stop()
	r, err := c.base.WaitUntil(wctx, baseTarget(wallMs, st.offsetMs(c.base.Now().Mono)))
	return c.st.Load().read(r), err
}

// baseTarget is wallMs-offMs, saturated at the ends of int64 so that an
// absurd target waits forever instead of wrapping round into the past.
func baseTarget(wallMs, offMs int64) int64 {
	t := wallMs - offMs
	if offMs < 0 && t < wallMs {
		return math.MaxInt64
	}
	if offMs > 0 && t > wallMs {
		return math.MinInt64
	}
	return t
}

// Sleep waits for d on the base clock's monotonic clock, or until ctx is
// done. The offset plays no part.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	return c.base.Sleep(ctx, d)
}
