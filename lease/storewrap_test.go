package lease_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// wrapStore is a real store with its Claim calls recorded and, when gate is
// set, held up: the store underneath does all the work.
//
// The siblings Keyspace opens are wrapped too and record into, and are
// gated by, the wrapStore they were opened from (their root): a test sees
// every claim its keeper made, on whichever keyspace, in the order made.
type wrapStore struct {
	lease.Store
	// root is the wrapStore whose record and gate this one uses; nil: its
	// own.
	root   *wrapStore
	mu     sync.Mutex
	claims []lease.ClaimRequest
	// gate, if set, is called before each Claim reaches the store, with
	// the call's number (0 first) and its context; the claim then runs on
	// the context gate returns.
	gate func(n int, ctx context.Context) context.Context
}

func (w *wrapStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	r := w.base()
	r.mu.Lock()
	n := len(r.claims)
	r.claims = append(r.claims, req)
	gate := r.gate
	r.mu.Unlock()
	if gate != nil {
		ctx = gate(n, ctx)
	}
	return w.Store.Claim(ctx, req)
}

// base returns the wrapStore whose record and gate w uses.
func (w *wrapStore) base() *wrapStore {
	if w.root != nil {
		return w.root
	}
	return w
}

// Keyspace wraps the real store's sibling on keyspace index, recording
// into w's root.
func (w *wrapStore) Keyspace(index int) (lease.Store, error) {
	sib, err := w.Store.Keyspace(index)
	if err != nil {
		return nil, err
	}
	return &wrapStore{Store: sib, root: w.base()}, nil
}

// requests returns the claim requests seen so far, through w and every
// sibling of it.
func (w *wrapStore) requests() []lease.ClaimRequest {
	w = w.base()
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]lease.ClaimRequest(nil), w.claims...)
}

// admin is the real store underneath, for the operator's actions a test
// takes beside the keeper (the wrapper itself has only the fence
// contract).
func (w *wrapStore) admin() lease.Admin { return w.Store.(lease.Admin) }

// errCut is what a holder cut off from its store gets: a transient error
// of unknown outcome, as from a partition.
var errCut = errors.New("cut off from the store")

// cutStore is a real store that, once cut is set, answers every call with
// errCut without reaching the store: a network partition around one
// holder.
//
// The partition is around the holder, not one keyspace: the siblings
// Keyspace opens are cut off with the cutStore they were opened from
// (their root).
type cutStore struct {
	lease.Store
	// root is the cutStore whose cut this one obeys; nil: its own.
	root *cutStore
	cut  atomic.Bool
}

// isCut reports whether c's root is cut off.
func (c *cutStore) isCut() bool {
	if c.root != nil {
		return c.root.cut.Load()
	}
	return c.cut.Load()
}

// Keyspace opens the real store's sibling behind a cutStore cut off with
// c. Opening one sends no request, so it is never refused.
func (c *cutStore) Keyspace(index int) (lease.Store, error) {
	sib, err := c.Store.Keyspace(index)
	if err != nil {
		return nil, err
	}
	root := c
	if c.root != nil {
		root = c.root
	}
	return &cutStore{Store: sib, root: root}, nil
}

func (c *cutStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	if c.isCut() {
		return nil, errCut
	}
	return c.Store.Claim(ctx, req)
}

func (c *cutStore) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	if c.isCut() {
		return nil, errCut
	}
	return c.Store.Extend(ctx, l, markMs, leaseFor)
}

func (c *cutStore) Get(ctx context.Context, n int) (lease.Record, error) {
	if c.isCut() {
		return lease.Record{}, errCut
	}
	return c.Store.Get(ctx, n)
}

func (c *cutStore) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	if c.isCut() {
		return errCut
	}
	return c.Store.Release(ctx, l, markMs)
}
