package lease_test

import (
	"context"
	"sync"

	"github.com/snowfence/snowfence/lease"
)

// wrapStore is a real store with its Claim calls recorded and, when gate is
// set, held up: the store underneath does all the work.
type wrapStore struct {
	lease.Store
	mu     sync.Mutex
	claims []lease.ClaimRequest
	// gate, if set, is called before each Claim reaches the store, with
	// the call's number (0 first) and its context; the claim then runs on
	// the context gate returns.
	gate func(n int, ctx context.Context) context.Context
}

func (w *wrapStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	w.mu.Lock()
	n := len(w.claims)
	w.claims = append(w.claims, req)
	gate := w.gate
	w.mu.Unlock()
	if gate != nil {
		ctx = gate(n, ctx)
	}
	return w.Store.Claim(ctx, req)
}

// requests returns the claim requests seen so far.
func (w *wrapStore) requests() []lease.ClaimRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]lease.ClaimRequest(nil), w.claims...)
}
