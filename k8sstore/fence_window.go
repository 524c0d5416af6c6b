package k8sstore

import (
	"time"

	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/lease"
)

// restoreWindow is the window a claim's floor keeps after a noticed
// restore: the longest of req's, the store's MaxRestoreWindow and
// Config.RestoreWindow. The cut-off holder the floor must outlast may be
// another process with longer timings than the claimer's; every keeper on
// a Kubernetes store is refused a window above the store's
// MaxRestoreWindow (the constant, or a test fleet's bound, which every
// process of that fleet has), which therefore covers them all: the floor
// keeps a claim after a restore apart from a cut-off holder's IDs.
// Load-bearing for uniqueness: change only with scripts/prove-search window.
func (s *Store) restoreWindow(req lease.ClaimRequest) time.Duration {
	if revert.Window {
		if req.RestoreWindow > 0 {
			return req.RestoreWindow
		}
		return s.cfg.RestoreWindow
	}
	return max(req.RestoreWindow, s.cfg.RestoreWindow, s.MaxRestoreWindow())
}
