package leasetest

import (
	"context"
	"math"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// StartKeeper starts a keeper (lease.StartKeeper, which returns before any
// claim) and waits for its first claim's outcome (Keeper.ClaimedOrFull):
// it returns the keeper once it holds a number, or the error — the
// keeper's own (ErrSchedule, ErrInvalid, a registry refusal), an error
// matching lease.ErrNoFreeNumber when every number is held, or ctx's —
// having closed it. It is the blocking start the tests of a holder that
// needs its number at once were written against.
//
// On a fake clock (cfg.Clock a *fakeclock.Clock) a first claim that failed
// for a reason a retry fixes — a request timed out on a loaded machine —
// waits its retry on that clock, which nothing else moves while the test
// is blocked here: StartKeeper then moves it on (retryClock) until the
// keeper holds a number, rather than let one slow request fail the test
// at ctx's end.
func StartKeeper(ctx context.Context, cfg lease.KeeperConfig) (*lease.Keeper, error) {
	fc, fake := cfg.Clock.(*fakeclock.Clock)
	base := 0
	if fake {
		base = fc.Waiters() // other keepers asleep on a shared clock
	}
	k, err := lease.StartKeeper(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if fake {
		defer retryClock(ctx, fc, k, base)()
	}
	if err := k.ClaimedOrFull(ctx); err != nil {
		k.Close(context.WithoutCancel(ctx), lease.UnknownIssued) // nothing was issued: no generator ran on it
		return nil, err
	}
	return k, nil
}

// retryClock moves fc on in 50 ms steps (driveClock) while k has claimed
// nothing, its last claim failed, and at least base+1 goroutines sleep on
// fc (base: those asleep on it before k started); it stops when the
// returned function is called. Before k's first claim has failed the
// clock stays where the test put it. After that it may also move while a
// retry is in flight, when other keepers on a shared clock sleep — as
// real time would: a claim's start is max(NowMs, the stored mark, the
// floor), so moving the clock cannot make a claim start below a mark.
// It does make a store that answers a lost claim race with an untyped
// error pass the start (its retry then finds the numbers held), which the
// Store contract allows: after an untyped error callers re-read.
func retryClock(ctx context.Context, fc *fakeclock.Clock, k *lease.Keeper, base int) (stop func()) {
	return driveClock(ctx, fc, func() int {
		if st := k.Status(); st.Claims == 0 && st.LastError != "" {
			return base + 1
		}
		return math.MaxInt // never reached: wait, and ask again
	}, 50*time.Millisecond)
}
