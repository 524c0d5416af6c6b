package service

import (
	"context"
	"log/slog"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
)

// holderCount keeps the perimeter's count of the fleet's live holders, by
// which it divides every caller's quota (perimeter.SetHolders): once the
// holder first issues, and then every renewal period, it counts the live
// holders of the keyspace of the lease in force (lease.CountHolders: one
// cheap read of the store; the request path never reads the store). A
// failed read, or a moment with no lease (lost, claiming again), keeps the
// last count in force: a count that goes stale while the store is
// unreachable errs by a holder that joined or left since, where dropping
// to 1 would let a caller take N times its quota.
type holderCount struct {
	store    lease.Store        // the holder's store (its region's keyspace of the first layout)
	keyspace func() (int, bool) // the keyspace of the lease in force, false when none is held
	clock    snowfence.Clock
	every    time.Duration
	set      func(int)
	log      *slog.Logger

	sib    lease.Store // the store of keyspace sibIdx when it is not store's own
	sibIdx int
	failed bool // the last read failed: log the next success
}

// run counts once ready is closed, then every c.every, until ctx ends.
func (c *holderCount) run(ctx context.Context, ready <-chan struct{}) {
	defer func() {
		if c.sib != nil {
			c.sib.Close()
		}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		return
	}
	for {
		c.once(ctx)
		if err := c.clock.Sleep(ctx, c.every); err != nil {
			return
		}
	}
}

// once counts the holders and sets the count, or keeps the last.
func (c *holderCount) once(ctx context.Context) {
	ks, held := c.keyspace()
	if !held {
		return
	}
	st, err := c.storeOf(ks)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, c.every)
		var n int
		n, err = lease.CountHolders(cctx, st, c.clock.Now().WallMs)
		cancel()
		if err == nil {
			if c.failed && c.log != nil {
				c.log.Info("counted the fleet's holders again", "holders", n)
			}
			c.failed = false
			c.set(n)
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	if !c.failed && c.log != nil {
		c.log.Warn("cannot count the fleet's holders; callers' quotas stay divided by the last count", "error", err)
	}
	c.failed = true
}

// storeOf is the store of keyspace ks: the holder's own, or its sibling,
// opened once and kept while the lease in force is there.
func (c *holderCount) storeOf(ks int) (lease.Store, error) {
	if ks == c.store.Region() {
		return c.store, nil
	}
	if c.sib != nil && c.sibIdx == ks {
		return c.sib, nil
	}
	st, err := c.store.Keyspace(ks)
	if err != nil {
		return nil, err
	}
	if c.sib != nil {
		c.sib.Close()
	}
	c.sib, c.sibIdx = st, ks
	return st, nil
}
