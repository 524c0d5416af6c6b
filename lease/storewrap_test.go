package lease_test

import (
	"context"
	"sync"

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
