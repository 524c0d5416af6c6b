package offsetclock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/offsetclock"
)

var start = time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC)

// newClock returns a frozen fake base at start and an offset clock over it.
func newClock() (*fakeclock.Clock, *offsetclock.Clock) {
	base := fakeclock.New(start)
	return base, offsetclock.New(base)
}

// waitCtx bounds a test's synchronisation waits.
func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type waitResult struct {
	r   snowfence.Reading
	err error
}

// waitAsync runs WaitUntil in a goroutine and delivers its result.
func waitAsync(ctx context.Context, c *offsetclock.Clock, wallMs int64) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		r, err := c.WaitUntil(ctx, wallMs)
		ch <- waitResult{r, err}
	}()
	return ch
}

// receive takes the waiter's result, failing the test if none comes in time.
func receive(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(10 * time.Second):
		t.Fatal("WaitUntil did not return within 10 s")
		return waitResult{}
	}
}

// notYet fails if the waiter has returned. Call it only while the waiter is
// known to be blocked on the base clock.
func notYet(t *testing.T, ch <-chan waitResult) {
	t.Helper()
	select {
	case res := <-ch:
		t.Fatalf("WaitUntil returned early: %+v", res)
	default:
	}
}

func TestNowOffsetsWallOnly(t *testing.T) {
	base, c := newClock()
	t0 := base.Now()
	if got := c.Now(); got != t0 {
		t.Fatalf("zero offset: Now = %+v, want the base's %+v", got, t0)
	}
	steps := []struct {
		name string
		do   func() time.Duration
		want time.Duration
	}{
		{"step back 280 ms", func() time.Duration { return c.Step(-280 * time.Millisecond) }, -280 * time.Millisecond},
		{"step forward 10 min", func() time.Duration { return c.Step(10 * time.Minute) }, 10*time.Minute - 280*time.Millisecond},
		{"set 3 ms back", func() time.Duration { c.SetOffset(-3 * time.Millisecond); return c.Offset() }, -3 * time.Millisecond},
		{"set truncates toward zero", func() time.Duration { c.SetOffset(-1999 * time.Microsecond); return c.Offset() }, -time.Millisecond},
		{"step truncates toward zero", func() time.Duration { return c.Step(2500 * time.Microsecond) }, time.Millisecond},
		{"set clamps", func() time.Duration { c.SetOffset(-200 * 365 * 24 * time.Hour); return c.Offset() }, -offsetclock.MaxOffset},
		{"step clamps", func() time.Duration { c.SetOffset(offsetclock.MaxOffset); return c.Step(time.Hour) }, offsetclock.MaxOffset},
		{"back to zero", func() time.Duration { c.SetOffset(0); return c.Offset() }, 0},
	}
	for _, s := range steps {
		got := s.do()
		if got != s.want || c.Offset() != s.want {
			t.Fatalf("%s: returned %v, Offset %v; want %v", s.name, got, c.Offset(), s.want)
		}
		r := c.Now()
		if want := t0.WallMs + s.want.Milliseconds(); r.WallMs != want {
			t.Errorf("%s: WallMs = %d, want %d", s.name, r.WallMs, want)
		}
		if r.Mono != t0.Mono {
			t.Errorf("%s: Mono = %v, want the base's %v untouched", s.name, r.Mono, t0.Mono)
		}
	}
	base.Advance(7 * time.Millisecond)
	c.SetOffset(-time.Second)
	if r, b := c.Now(), base.Now(); r.WallMs != b.WallMs-1000 || r.Mono != b.Mono {
		t.Errorf("after Advance: Now = %+v, want base %+v with wall 1000 ms back", r, b)
	}
}

func TestWaitUntil(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset time.Duration
	}{
		{"no offset", 0},
		{"offset back 280 ms", -280 * time.Millisecond},
		{"offset forward 10 min", 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, c := newClock()
			c.SetOffset(tc.offset)
			now := c.Now()

			// Already reached: returns at once, without waiting.
			if r, err := c.WaitUntil(context.Background(), now.WallMs); err != nil || r != now {
				t.Fatalf("WaitUntil(now) = %+v, %v; want %+v", r, err, now)
			}

			ch := waitAsync(waitCtx(t), c, now.WallMs+10)
			if err := base.BlockUntilWaiters(waitCtx(t), 1); err != nil {
				t.Fatal(err)
			}
			base.Advance(9 * time.Millisecond)
			if err := base.BlockUntilWaiters(waitCtx(t), 1); err != nil {
				t.Fatal(err)
			}
			notYet(t, ch)
			base.Advance(time.Millisecond)
			res := receive(t, ch)
			want := snowfence.Reading{WallMs: now.WallMs + 10, Mono: now.Mono + 10*time.Millisecond}
			if res.err != nil || res.r != want {
				t.Errorf("WaitUntil = %+v, %v; want %+v", res.r, res.err, want)
			}
		})
	}
}

// A step forward while a waiter is blocked ends the wait at once, with no
// time passing on the base clock.
func TestWaitUntilStepForwardWhileWaiting(t *testing.T) {
	base, c := newClock()
	now := c.Now()
	ch := waitAsync(waitCtx(t), c, now.WallMs+10)
	if err := base.BlockUntilWaiters(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	c.Step(25 * time.Millisecond)
	res := receive(t, ch)
	want := snowfence.Reading{WallMs: now.WallMs + 25, Mono: now.Mono}
	if res.err != nil || res.r != want {
		t.Errorf("WaitUntil = %+v, %v; want %+v", res.r, res.err, want)
	}
	if n := base.Waiters(); n != 0 {
		t.Errorf("%d waiters left on the base clock, want 0", n)
	}
}

// A step back while a waiter is blocked prolongs the wait by the step: the
// base clock reaching the old target is not enough.
func TestWaitUntilStepBackWhileWaiting(t *testing.T) {
	base, c := newClock()
	now := c.Now()
	ch := waitAsync(waitCtx(t), c, now.WallMs+10)
	if err := base.BlockUntilWaiters(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	c.Step(-5 * time.Millisecond)
	// The old target: releases the first wait if it is still registered.
	base.Advance(10 * time.Millisecond)
	// Every waiter on the base now waits for more than +10 ms: the re-wait.
	if err := base.BlockUntilWaiters(waitCtx(t), 1); err != nil {
		t.Fatalf("no new wait on the base clock after the step back: %v", err)
	}
	notYet(t, ch)
	base.Advance(5 * time.Millisecond)
	res := receive(t, ch)
	want := snowfence.Reading{WallMs: now.WallMs + 10, Mono: now.Mono + 15*time.Millisecond}
	if res.err != nil || res.r != want {
		t.Errorf("WaitUntil = %+v, %v; want %+v", res.r, res.err, want)
	}
}

func TestWaitUntilContext(t *testing.T) {
	base, c := newClock()
	now := c.Now()

	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.WaitUntil(done, now.WallMs+1); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled ctx: err = %v, want context.Canceled", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := waitAsync(ctx, c, now.WallMs+10)
	if err := base.BlockUntilWaiters(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	res := receive(t, ch)
	if !errors.Is(res.err, context.Canceled) || res.r != now {
		t.Errorf("canceled while waiting: %+v, %v; want %+v, context.Canceled", res.r, res.err, now)
	}
	if n := base.Waiters(); n != 0 {
		t.Errorf("%d waiters left on the base clock, want 0", n)
	}
}

// An absurd target does not wrap round into the past.
func TestWaitUntilFarTarget(t *testing.T) {
	base, c := newClock()
	c.SetOffset(-time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := waitAsync(ctx, c, 1<<63-1)
	if err := base.BlockUntilWaiters(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	notYet(t, ch)
	cancel()
	if res := receive(t, ch); !errors.Is(res.err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", res.err)
	}
}

func TestSleepIgnoresOffset(t *testing.T) {
	base, c := newClock()
	errc := make(chan error, 1)
	go func() { errc <- c.Sleep(waitCtx(t), 10*time.Millisecond) }()
	if err := base.BlockUntilWaiters(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	c.Step(time.Hour)
	c.Step(-2 * time.Hour)
	if n := base.Waiters(); n != 1 {
		t.Fatalf("after offset steps: %d waiters on the base, want the sleeper still there", n)
	}
	base.Advance(10 * time.Millisecond)
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Sleep = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep did not return after 10 ms on the monotonic clock")
	}
}

// Steps racing readers and waiters: run with -race. Every WaitUntil return
// must honour its target under the offset it saw on return.
func TestConcurrentSteps(t *testing.T) {
	base := fakeclock.New(start)
	base.AutoAdvance(true)
	c := offsetclock.New(base)
	ctx := waitCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				switch g {
				case 0:
					c.Step(time.Duration(i%7-3) * time.Millisecond)
				case 1:
					c.SetOffset(time.Duration(i%11-5) * time.Millisecond)
				default:
					target := c.Now().WallMs + 2
					r, err := c.WaitUntil(ctx, target)
					if err != nil {
						errs <- err
						return
					}
					if r.WallMs < target {
						errs <- errors.New("WaitUntil returned a reading before its target")
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
