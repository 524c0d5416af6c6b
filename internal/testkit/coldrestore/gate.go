package coldrestore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// errCut is what a cut store answers: a request whose outcome the keeper
// cannot know, as when the server does not answer.
var errCut = errors.New("coldrestore: the holder is cut off from the server (the test's gate)")

// cutStore is a holder's Store that the sequence can cut off from the
// server: while cut, every call the keeper makes on its lease fails as an
// unanswered request would. RunFresh cuts A while the server is down for
// the restore, so that A goes on as a holder whose renewals fail at the
// moment of the restore, until N has claimed, however the two processes'
// requests are scheduled: A's renewal would otherwise notice the restore
// as the server comes back and claim number 0 again before N could.
//
// Run cuts the siblings A and B for the restore, until D has claimed again
// (nextClaim), for the same reason.
type cutStore struct {
	lease.Store
	cut atomic.Bool
	// calls is read-held by each call while it runs, so that sever can
	// wait for the calls that passed the gate before it closed.
	calls sync.RWMutex

	mu      sync.Mutex
	claimed chan struct{} // closed at the next successful Claim, if set
}

// nextClaim returns a channel closed once the store's next Claim succeeds.
func (s *cutStore) nextClaim() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimed = make(chan struct{})
	return s.claimed
}

// sever cuts the store off for good and waits until no call that passed
// the gate before is still running: after it, nothing this holder sent
// can still move its lease on.
func (s *cutStore) sever() {
	s.cut.Store(true)
	s.calls.Lock()
	defer s.calls.Unlock()
}

func (s *cutStore) err() error {
	if s.cut.Load() {
		return errCut
	}
	return nil
}

func (s *cutStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	s.calls.RLock()
	defer s.calls.RUnlock()
	if err := s.err(); err != nil {
		return nil, err
	}
	l, err := s.Store.Claim(ctx, req)
	if err == nil {
		s.mu.Lock()
		if s.claimed != nil {
			close(s.claimed)
			s.claimed = nil
		}
		s.mu.Unlock()
	}
	return l, err
}

func (s *cutStore) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	s.calls.RLock()
	defer s.calls.RUnlock()
	if err := s.err(); err != nil {
		return nil, err
	}
	return s.Store.Extend(ctx, l, markMs, leaseFor)
}

func (s *cutStore) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	s.calls.RLock()
	defer s.calls.RUnlock()
	if err := s.err(); err != nil {
		return err
	}
	return s.Store.Release(ctx, l, markMs)
}

func (s *cutStore) Get(ctx context.Context, machine int) (lease.Record, error) {
	s.calls.RLock()
	defer s.calls.RUnlock()
	if err := s.err(); err != nil {
		return lease.Record{}, err
	}
	return s.Store.Get(ctx, machine)
}
