package leasetest

import (
	"context"

	"github.com/snowfence/snowfence/lease"
)

// StartKeeper starts a keeper (lease.StartKeeper, which returns before any
// claim) and waits for its first claim's outcome (Keeper.ClaimedOrFull):
// it returns the keeper once it holds a number, or the error — the
// keeper's own (ErrSchedule, ErrInvalid, a registry refusal), an error
// matching lease.ErrNoFreeNumber when every number is held, or ctx's —
// having closed it. It is the blocking start the tests of a holder that
// needs its number at once were written against.
func StartKeeper(ctx context.Context, cfg lease.KeeperConfig) (*lease.Keeper, error) {
	k, err := lease.StartKeeper(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := k.ClaimedOrFull(ctx); err != nil {
		k.Close(context.WithoutCancel(ctx), lease.UnknownIssued) // nothing was issued: no generator ran on it
		return nil, err
	}
	return k, nil
}
