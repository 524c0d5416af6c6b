package lease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// The claim loop. A keeper claims in one place only: its run loop
// (keeper.go), from the start (StartKeeper returns before any claim), again
// after a loss, and for a later layout from Lead before its cutover. What a
// hold does after a claim that ended without a number is decided here
// (claimed): a claim that found every number held waits as a spare does,
// with a jittered backoff; the keeper's first claim refused for a reason
// retrying cannot fix stops the keeper; anything else is retried at the
// pace waitAfter gives a failed renewal. Claimed and ClaimedOrFull wait
// for the outcome, for an owner that needs a number before it goes on.

// The waits of a spare between claims while every number of its range is
// held: the first about claimRetryMin, each next twice the last up to
// claimRetryMax (or RenewEvery when shorter), each jittered to between half
// and all of it, so that spares started together do not claim in step. A
// number freed by a release or an expired lease is so taken within
// min(claimRetryMax, RenewEvery), as a holder of the fleet would notice its
// own loss within one renewal period; a waiting spare costs the store one
// claim per half to one such period.
const (
	claimRetryMin = 250 * time.Millisecond
	claimRetryMax = 5 * time.Second
	// claimWaitLogEvery is how often a spare logs that it still waits.
	claimWaitLogEvery = time.Minute
)

// jitter returns a number in [0, 1) for the spare's waits; tests replace it.
var jitter = rand.Float64

// claimWait is the run loop's record of one hold's claims that found every
// number held, since its last number.
type claimWait struct {
	attempts       int
	backoff        time.Duration
	since, lastLog time.Duration // monotonic readings
}

// holding reports whether the hold has a lease (its next step renews).
func (h *hold) holding() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease != nil
}

// claimed records the outcome err of a step that claimed (the hold had no
// lease) and returns how long the hold waits before its next step (wait,
// waitAfter's, unless every number was held) and whether the keeper stops.
func (k *Keeper) claimed(h *hold, w *claimWait, err error, wait time.Duration) (time.Duration, bool) {
	c := &k.cfg
	now := c.Clock.Now().Mono
	h.mu.Lock()
	held, first := h.lease != nil, h.status.Claims == 0
	if held {
		h.claimErr = nil
	} else {
		h.claimErr = err
	}
	h.mu.Unlock()
	switch {
	case held:
		if w.attempts > 0 {
			k.log.Info("a machine number freed: claimed it", "holder", c.Holder, "layout", h.layout, "attempts", w.attempts+1,
				"waited", (now - w.since).Round(time.Millisecond))
		}
		*w = claimWait{}
		return wait, false
	case err == nil || errors.Is(err, errClosed):
		return wait, false
	case first && h == k.holds[0] && registryRefused(err):
		// The keeper never held a number: its configuration, not the
		// store's state, is wrong (a schedule other than the fleet's, a
		// store of another region). Claiming on would hide it.
		k.fail(h, err)
		return 0, true
	case !errors.Is(err, ErrNoFreeNumber):
		return wait, false
	}
	// Every number of the range is held: wait as a spare, for one to free.
	if w.attempts == 0 {
		w.backoff, w.since, w.lastLog = claimRetryMin, now, now
	}
	w.attempts++
	d := w.backoff/2 + time.Duration(jitter()*float64(w.backoff/2))
	switch {
	case w.attempts == 1:
		k.log.Warn("every machine number in the range is held: waiting for one to free (the generator refuses until then)",
			"holder", c.Holder, "layout", h.layout, "range", h.rng.String(), "error", err, "retry_in", d.Round(time.Millisecond))
	case now-w.lastLog >= claimWaitLogEvery:
		k.log.Warn("still waiting for a free machine number", "holder", c.Holder, "layout", h.layout, "attempts", w.attempts,
			"waited", (now - w.since).Round(time.Second), "error", err)
		w.lastLog = now
	default:
		k.log.Debug("no free machine number yet", "layout", h.layout, "attempt", w.attempts, "error", err, "retry_in", d.Round(time.Millisecond))
	}
	w.backoff = min(2*w.backoff, min(claimRetryMax, max(claimRetryMin, c.RenewEvery)))
	return d, false
}

// fail stops the keeper on err, from its first claim: Err returns it,
// Failed is closed, the hold's status says StateFailed and the generator
// refuses with it.
//
// The hold's status and refusal are set before Failed closes, so that a
// caller woken by Failed finds them (it once found the status still
// "claiming": CI saw TestKeeperFirstClaimRefusedStops fail so).
func (k *Keeper) fail(h *hold, err error) {
	h.mu.Lock()
	h.status.State = StateFailed
	h.status.LastError = err.Error()
	h.setWhy(fmt.Errorf("lease: the keeper stopped: its first claim was refused, which claiming again cannot fix: %w", err))
	h.mu.Unlock()
	k.mu.Lock()
	if k.err == nil {
		k.err = err
		close(k.failed)
	}
	k.mu.Unlock()
	k.log.Error("the first claim was refused for a reason claiming again cannot fix: the keeper stopped; fix the configuration and start again",
		"holder", k.cfg.Holder, "layout", h.layout, "error", err)
	k.signal()
}

// signal wakes every Claimed waiting, to look again.
func (k *Keeper) signal() {
	k.mu.Lock()
	close(k.changed)
	k.changed = make(chan struct{})
	k.mu.Unlock()
}

// Err returns the error that stopped the keeper (see Failed), or nil while
// it runs.
func (k *Keeper) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Failed returns a channel closed when the keeper stops because its first
// claim was refused for a reason claiming again cannot fix: a schedule
// other than the fleet's (ErrSchedule), a store of another region or a
// keyspace it cannot use (ErrInvalid). Err says which. It then claims
// nothing, its generator refuses, and its owner should Close it and report
// the error. A keeper that held a number once never fails: it claims again
// after a loss, whatever the reason, and shows why in Status.
func (k *Keeper) Failed() <-chan struct{} { return k.failed }

// ClaimError returns the error of the last claim for the layout in force
// now while the keeper holds no number for it, or nil (a number is held,
// or no claim has ended yet). errors.Is(err, ErrNoFreeNumber) tells a spare
// waiting for a number to free.
func (k *Keeper) ClaimError() error {
	h := k.current()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.claimErr
}

// Claimed waits until the keeper holds a number for the layout in force now
// and has published its grant (the grant may start later: a claim's first
// grant waits out the store's notice window, which the generator waits
// for). It returns nil then; Err if the keeper stopped; an error if it was
// closed; and, when ctx ends first, an error matching both ctx's error and
// the last claim's (ErrNoFreeNumber for a spare still waiting).
func (k *Keeper) Claimed(ctx context.Context) error { return k.await(ctx, false) }

// ClaimedOrFull is Claimed, but it also returns, with an error matching
// ErrNoFreeNumber, once a claim found every number of the range held: the
// blocking start of an owner that would rather fail than wait as a spare
// (node.Start). The keeper itself goes on claiming until Close.
func (k *Keeper) ClaimedOrFull(ctx context.Context) error { return k.await(ctx, true) }

// await is Claimed (full false) and ClaimedOrFull (full true).
func (k *Keeper) await(ctx context.Context, full bool) error {
	for {
		k.mu.Lock()
		changed, err, closed := k.changed, k.err, k.closed
		k.mu.Unlock()
		switch {
		case err != nil:
			return err
		case closed:
			return errClosed
		}
		h := k.current()
		if h.grant.Load() != nil {
			return nil
		}
		h.mu.Lock()
		last := h.claimErr
		h.mu.Unlock()
		if full && errors.Is(last, ErrNoFreeNumber) {
			return last
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if last == nil {
				return fmt.Errorf("lease: no machine number held before the context ended: %w", ctx.Err())
			}
			return fmt.Errorf("lease: no machine number held before the context ended (%w); the last claim failed: %w", ctx.Err(), last)
		}
	}
}
