package service

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// countingStore is a lease.HolderCounter whose answers the test scripts.
type countingStore struct {
	lease.Store
	mu      sync.Mutex
	answers []any // an int or an error, one per count; the last repeats
	calls   int
}

func (s *countingStore) CountHolders(context.Context, int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.answers[min(s.calls, len(s.answers)-1)]
	s.calls++
	if err, ok := a.(error); ok {
		return 0, err
	}
	return a.(int), nil
}

// TestHolderCountFollowsTheStore: the count starts once the holder issues,
// is read again every renewal period, and a failed read keeps the last
// count in force.
func TestHolderCountFollowsTheStore(t *testing.T) {
	clk := fakeclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	st := &countingStore{answers: []any{3, errors.New("store unreachable"), errors.New("store unreachable"), 2}}
	var mu sync.Mutex
	var set []int
	c := &holderCount{store: st, keyspace: func() (int, bool) { return 0, true }, clock: clk, every: 2 * time.Second,
		set: func(n int) { mu.Lock(); set = append(set, n); mu.Unlock() }}
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); c.run(ctx, ready) }()
	got := func() []int { mu.Lock(); defer mu.Unlock(); return append([]int(nil), set...) }
	if clk.Advance(time.Minute); len(got()) != 0 {
		t.Fatalf("counted %v before the holder issued", got())
	}
	close(ready)
	for i := range 4 {
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		err := clk.BlockUntilWaiters(wctx, 1)
		wcancel()
		if err != nil {
			t.Fatalf("the count's loop never slept (period %d): %v", i, err)
		}
		if i < 3 {
			clk.Advance(2 * time.Second)
		}
	}
	cancel()
	<-done
	if g := got(); len(g) != 2 || g[0] != 3 || g[1] != 2 {
		t.Errorf("counts set %v, want [3 2]: the failed reads between keep 3", g)
	}
	if st.calls != 4 {
		t.Errorf("%d counts in three renewal periods, want 4 (one at once, one per period)", st.calls)
	}
}

// TestHolderCountSkipsWithoutLease: while the keeper holds no number (lost,
// claiming again) the count is not read, and the last stays.
func TestHolderCountSkipsWithoutLease(t *testing.T) {
	clk := fakeclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	st := &countingStore{answers: []any{5}}
	var set []int
	c := &holderCount{store: st, keyspace: func() (int, bool) { return 0, false }, clock: clk, every: time.Second,
		set: func(n int) { set = append(set, n) }}
	c.once(t.Context())
	if st.calls != 0 || len(set) != 0 {
		t.Errorf("without a lease: %d reads, set %v; want none", st.calls, set)
	}
}

func (s *countingStore) Region() int { return 0 }
