package etcdstore

import (
	"time"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// claimFloorMs is the earliest start a claim may get, on the claimer's
// clock (req.NowMs): 0 if no restore was noticed, else the restore window
// after the moment it was noticed — req.NowMs plus the window minus the
// time elapsed since, on the store's monotonic clock — and never below
// req.NowMs. A holder cut off by the restore may issue for up to the
// window after its last renewal, which was before the moment noticed: the
// floor keeps a claim after a restore apart from its IDs. // Load-bearing for uniqueness: change only with scripts/prove-search window.
func (s *Store) claimFloorMs(req lease.ClaimRequest) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hist.restoredAt.IsZero() {
		return 0
	}
	if revert.Window {
		return s.hist.restoredAt.Add(s.restoreMargin).UnixMilli()
	}
	left := s.restoreWindow(req.RestoreWindow) - (s.clock.Now().Mono - s.hist.noticed.Mono)
	if left <= 0 {
		return req.NowMs
	}
	return req.NowMs + int64((left+time.Millisecond-1)/time.Millisecond)
}
