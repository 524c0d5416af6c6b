package snowfence

import (
	"context"
	"runtime"
	"time"
)

// A Reading is one look at the clocks: the wall clock in Unix milliseconds,
// and the monotonic clock as time elapsed since an arbitrary origin fixed for
// the clock's life. The wall clock tells time and may step; the monotonic
// clock measures time and never steps.
type Reading struct {
	WallMs int64
	Mono   time.Duration
}

// A Clock is the generator's and the lease keeper's only source of time:
// reads, waits and sleeps all go through it, so every clock story can be
// replayed deterministically with a fake (package fakeclock).
//
// Implementations must be safe for concurrent use.
type Clock interface {
	// Now reads the wall and monotonic clocks together.
	Now() Reading
	// WaitUntil returns the first reading whose WallMs is at least wallMs,
	// or the context's error. It must not overshoot by much: a generator
	// whose sequence ran out calls it to reach the next millisecond.
	WaitUntil(ctx context.Context, wallMs int64) (Reading, error)
	// Sleep waits for d on the monotonic clock, or until ctx is done.
	Sleep(ctx context.Context, d time.Duration) error
}

// systemClock reads the operating system's clocks through package time.
type systemClock struct{ origin time.Time }

// SystemClock returns the real clock: the kernel's CLOCK_REALTIME for the wall
// reading and CLOCK_MONOTONIC for the monotonic one, both from one time.Now.
//
// CLOCK_MONOTONIC stops while the host is suspended, so it alone could make a
// suspended holder believe its last renewal is recent; that case is caught by
// the wall-clock lease mark (the kernel advances CLOCK_REALTIME over a suspend)
// and by the lease keeper's watchdog, which measures renewals on
// CLOCK_BOOTTIME. Reading CLOCK_BOOTTIME costs a system call, too much for
// every ID.
func SystemClock() Clock { return systemClock{origin: time.Now()} }

func (c systemClock) Now() Reading {
	t := time.Now()
	return Reading{WallMs: t.UnixMilli(), Mono: t.Sub(c.origin)}
}

// spinMs is how close to the target, in whole milliseconds, WaitUntil stops
// sleeping and spins. Timer sleeps on Linux overshoot by 50 µs to over 1 ms
// under load, and every microsecond of overshoot after a used-up tick is a
// microsecond of IDs not issued.
const spinMs = 2

func (c systemClock) WaitUntil(ctx context.Context, wallMs int64) (Reading, error) {
	for i := 0; ; i++ {
		r := c.Now()
		if r.WallMs >= wallMs {
			return r, nil
		}
		if i&255 == 0 {
			if err := ctx.Err(); err != nil {
				return r, err
			}
		}
		if left := wallMs - r.WallMs; left > spinMs {
			if err := c.Sleep(ctx, time.Duration(left-spinMs)*time.Millisecond); err != nil {
				return r, err
			}
			continue
		}
		// Spin, but let other goroutines run: on one core a spinning
		// waiter would otherwise hold up everything for up to a tick.
		runtime.Gosched()
	}
}

func (c systemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
