package dynamostore

import (
	"time"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// restoreWindow is how long after noticing a restore claims start, on the
// claimer's clock: the longest of the request's RestoreWindow,
// MaxRestoreWindow and the store's MaxReserve plus a tenth (for clocks 8 %
// fast or slow). The cut-off holder the floor must outlast may be another
// process with longer timings than the claimer's; every keeper on a
// DynamoDB store is refused a window above MaxRestoreWindow, which
// therefore covers them all.
// The floor keeps a claim after a restore apart from a cut-off holder's IDs.
// Load-bearing for uniqueness: change only with scripts/prove-search window.
func (s *Store) restoreWindow(req lease.ClaimRequest) time.Duration {
	byReserve := s.cfg.MaxReserve + s.cfg.MaxReserve/10
	if revert.Window {
		if req.RestoreWindow > 0 {
			return req.RestoreWindow
		}
		return byReserve
	}
	return max(req.RestoreWindow, byReserve, MaxRestoreWindow)
}
