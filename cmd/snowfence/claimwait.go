package main

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
)

// The waits of a spare between claims: the first about claimRetryMin, each
// next twice the last up to claimRetryMax, each jittered to between half and
// all of it, so that spares started together do not claim in step. serve
// caps the waits at its renewal period when that is shorter, so a freed
// number is taken within min(claimRetryMax, --renew-every) of its release;
// a waiting spare costs the store one claim per half to one such period.
const (
	claimRetryMin = 250 * time.Millisecond
	claimRetryMax = 5 * time.Second
	// claimWaitLogEvery is how often a spare logs that it still waits.
	claimWaitLogEvery = time.Minute
)

// claimWaiter starts the node again and again while every machine number
// in the range is held (lease.ErrNoFreeNumber): a spare waits for a number
// instead of exiting, so a rolling deploy's new instance takes the number
// the moment the old one releases it. Every other error is one retrying
// cannot fix (a bad schedule, range or placement) and ends the wait at
// once; errors a retry may fix (an unreachable store) node.Start already
// retries by itself.
type claimWaiter struct {
	// clock paces the waits and the log lines. Required.
	clock snowfence.Clock
	// jitter returns a number in [0, 1). Nil: math/rand/v2.
	jitter func() float64
	// min and max bound the waits. Zero: claimRetryMin and claimRetryMax.
	min, max time.Duration
	// logEvery is the least time between two "still waiting" lines. Zero:
	// claimWaitLogEvery.
	logEvery time.Duration
	log      *slog.Logger
	// waiting, if set, is told of each claim that found no free number,
	// before the wait that follows it.
	waiting func(attempt int, err error)
}

// wait calls start until it returns a node, or fails with an error other
// than lease.ErrNoFreeNumber (returned as it is), or ctx ends (then it
// returns an error wrapping ctx's). start is called at least once.
func (w *claimWaiter) wait(ctx context.Context, start func(context.Context) (*node.Node, error)) (*node.Node, error) {
	lo, hi, every := w.min, w.max, w.logEvery
	if lo <= 0 {
		lo = claimRetryMin
	}
	if hi <= 0 {
		hi = claimRetryMax
	}
	if every <= 0 {
		every = claimWaitLogEvery
	}
	jitter := w.jitter
	if jitter == nil {
		jitter = rand.Float64
	}
	began := w.clock.Now().Mono
	var lastLog time.Duration
	backoff := lo
	for attempt := 1; ; attempt++ {
		n, err := start(ctx)
		if err == nil {
			if attempt > 1 {
				w.log.Info("a machine number freed: claimed it", "attempts", attempt, "waited", (w.clock.Now().Mono - began).Round(time.Millisecond))
			}
			return n, nil
		}
		if !errors.Is(err, lease.ErrNoFreeNumber) || ctx.Err() != nil {
			return nil, err
		}
		if w.waiting != nil {
			w.waiting(attempt, err)
		}
		d := backoff/2 + time.Duration(jitter()*float64(backoff/2))
		now := w.clock.Now().Mono
		switch {
		case attempt == 1:
			w.log.Warn("every machine number in the range is held: waiting for one to free (answering 503 until then)", "error", err, "retry_in", d.Round(time.Millisecond))
			lastLog = now
		case now-lastLog >= every:
			w.log.Warn("still waiting for a free machine number", "attempts", attempt, "waited", (now - began).Round(time.Second), "error", err)
			lastLog = now
		default:
			w.log.Debug("no free machine number yet", "attempt", attempt, "error", err, "retry_in", d.Round(time.Millisecond))
		}
		if err := w.clock.Sleep(ctx, d); err != nil {
			return nil, err
		}
		backoff = min(2*backoff, hi)
	}
}

// quietHandler passes records through at their level, or at Debug while
// quiet is set: a waiting spare's keeper logs every claim that finds no
// free number, which claimWaiter already reports at its own pace.
type quietHandler struct {
	inner slog.Handler
	quiet *atomic.Bool
}

// quietWhile returns a logger writing to log's handler that demotes every
// record to Debug while quiet is set.
func quietWhile(log *slog.Logger, quiet *atomic.Bool) *slog.Logger {
	return slog.New(quietHandler{log.Handler(), quiet})
}

func (h quietHandler) Enabled(ctx context.Context, level slog.Level) bool {
	if h.quiet.Load() {
		level = min(level, slog.LevelDebug)
	}
	return h.inner.Enabled(ctx, level)
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.quiet.Load() && r.Level > slog.LevelDebug {
		r = r.Clone()
		r.Level = slog.LevelDebug
	}
	return h.inner.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietHandler{h.inner.WithAttrs(attrs), h.quiet}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.inner.WithGroup(name), h.quiet}
}
