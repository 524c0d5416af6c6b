package lease

import (
	"time"

	"github.com/snowfence/snowfence/internal/revert"
)

// The restore window, the keeper's half (the stores floor claims at it
// after a restore they noticed): a holder cut off by a restore may go on
// issuing for up to max(Reserve, SelfFence) × 1.1 + 1 s after its last
// renewal, so every claim after the restore must start at least that late.

// defaultRestoreWindow is the RestoreMargin a keeper configured with none
// gets: RestoreWindow of its Reserve and SelfFence, which keeps a claim
// after a restore apart from the IDs a cut-off holder still issues.
// Load-bearing for uniqueness: change only with scripts/prove-search window.
func (c *KeeperConfig) defaultRestoreWindow() time.Duration {
	if revert.Window {
		return c.Reserve + time.Second // the old default, and no check
	}
	return RestoreWindow(c.Reserve, c.SelfFence)
}

// restoreMarginTooShort reports a RestoreMargin shorter than window, the
// time a cut-off holder may go on issuing: claims after a restore would
// start among its IDs. Load-bearing for uniqueness: change only with
// scripts/prove-search window.
func (c *KeeperConfig) restoreMarginTooShort(window time.Duration) bool {
	return c.RestoreMargin < window && !revert.Window
}

// restoreMarginTooLong reports a RestoreMargin longer than maxW, the
// window the store floors every claim at after a restore: another
// process's claim could start while this keeper, cut off, still issues.
// Load-bearing for uniqueness: change only with scripts/prove-search window.
func (c *KeeperConfig) restoreMarginTooLong(maxW time.Duration) bool {
	return !revert.Window && c.RestoreMargin > maxW
}

// claimRestoreWindow is the ClaimRequest.RestoreWindow of this keeper's
// claims, which the store floors a claim at after a restore it noticed,
// keeping the claim apart from a cut-off holder's IDs. Load-bearing for
// uniqueness: change only with scripts/prove-search window.
func (c *KeeperConfig) claimRestoreWindow() time.Duration {
	if revert.Window {
		return 0
	}
	return c.RestoreMargin
}
