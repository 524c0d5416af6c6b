// Package fakeclock is a controllable snowfence.Clock for tests: it stands
// still until told to move, its wall clock can be stepped back or forward
// without touching its monotonic clock, it can run fast or slow, and tests can
// wait until goroutines are blocked on it, so clock stories play out the same
// way every run without real sleeps.
package fakeclock

import (
	"context"
	"sync"
	"time"

	"github.com/snowfence/snowfence"
)

// Clock is a fake snowfence.Clock. The zero value is not usable; call New.
// It is safe for concurrent use.
type Clock struct {
	mu      sync.Mutex
	wall    time.Duration // since the Unix epoch
	mono    time.Duration
	rate    float64
	auto    bool
	waiters []*waiter
	// changed is closed and replaced whenever a waiter arrives.
	changed chan struct{}
}

type waiter struct {
	wallMs int64         // wait until wall reaches this (if mono == 0)
	mono   time.Duration // or until mono reaches this
	byMono bool
	done   chan struct{}
}

var _ snowfence.Clock = (*Clock)(nil)

// New returns a frozen fake clock whose wall clock reads start and whose
// monotonic clock reads one hour (so "zero" is never a meaningful reading).
func New(start time.Time) *Clock {
	return &Clock{wall: time.Duration(start.UnixNano()), mono: time.Hour, rate: 1, changed: make(chan struct{})}
}

// Now returns the current readings.
func (c *Clock) Now() snowfence.Reading {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reading()
}

func (c *Clock) reading() snowfence.Reading {
	return snowfence.Reading{WallMs: int64(c.wall / time.Millisecond), Mono: c.mono}
}

// Time returns the wall clock as a time.Time.
func (c *Clock) Time() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Unix(0, int64(c.wall)).UTC()
}

// Advance lets d of true time pass: both clocks move by d times the rate, and
// waiters whose time has come are released.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	step := time.Duration(float64(d) * c.rate)
	c.wall += step
	c.mono += step
	c.release()
}

// Step moves the wall clock alone by d, as an NTP step does: negative is a
// step back. The monotonic clock does not move.
func (c *Clock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall += d
	c.release()
}

// Set sets the wall clock to t, leaving the monotonic clock alone.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = time.Duration(t.UnixNano())
	c.release()
}

// SetRate makes the clock run fast (rate > 1) or slow (rate < 1) relative to
// the true time passed to Advance. 1.08 is 8 % fast.
func (c *Clock) SetRate(rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rate = rate
}

// AutoAdvance makes WaitUntil and Sleep move the clock to their target at
// once instead of blocking (on), or block until Advance (off, the default:
// the clock is frozen).
func (c *Clock) AutoAdvance(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.auto = on
}

// WaitUntil returns once the wall clock reads wallMs or later.
func (c *Clock) WaitUntil(ctx context.Context, wallMs int64) (snowfence.Reading, error) {
	c.mu.Lock()
	if r := c.reading(); r.WallMs >= wallMs {
		c.mu.Unlock()
		return r, nil
	}
	if c.auto {
		d := time.Duration(wallMs)*time.Millisecond - c.wall
		c.wall += d
		c.mono += d
		c.release()
		r := c.reading()
		c.mu.Unlock()
		return r, nil
	}
	w := &waiter{wallMs: wallMs, done: make(chan struct{})}
	c.add(w)
	c.mu.Unlock()
	return c.block(ctx, w)
}

// Sleep returns once the monotonic clock has moved by d.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	c.mu.Lock()
	if c.auto {
		c.wall += d
		c.mono += d
		c.release()
		c.mu.Unlock()
		return nil
	}
	w := &waiter{mono: c.mono + d, byMono: true, done: make(chan struct{})}
	c.add(w)
	c.mu.Unlock()
	_, err := c.block(ctx, w)
	return err
}

func (c *Clock) add(w *waiter) {
	c.waiters = append(c.waiters, w)
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Clock) block(ctx context.Context, w *waiter) (snowfence.Reading, error) {
	select {
	case <-w.done:
		return c.Now(), nil
	case <-ctx.Done():
		c.mu.Lock()
		c.remove(w)
		c.mu.Unlock()
		return c.Now(), ctx.Err()
	}
}

// release wakes the waiters that are due. c.mu must be held.
func (c *Clock) release() {
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		due := (w.byMono && c.mono >= w.mono) || (!w.byMono && int64(c.wall/time.Millisecond) >= w.wallMs)
		if due {
			close(w.done)
			continue
		}
		kept = append(kept, w)
	}
	c.waiters = kept
}

func (c *Clock) remove(w *waiter) {
	for i, x := range c.waiters {
		if x == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			return
		}
	}
}

// Waiters returns how many goroutines are blocked on the clock.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// BlockUntilWaiters returns once at least n goroutines are blocked on the
// clock, so a test can advance time knowing who will see it.
func (c *Clock) BlockUntilWaiters(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		if len(c.waiters) >= n {
			c.mu.Unlock()
			return nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
