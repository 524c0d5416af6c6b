package lease

import "github.com/snowfence/snowfence/internal/revert"

// keepsHighWater reports whether the keeper keeps a high-water mark
// outside the store (KeeperConfig.HighWater): grants bounded by it, and
// started above it after a restart, which keeps a restarted holder's IDs
// apart from those it issued before a store restore took its mark back.
// Load-bearing for uniqueness: change only with scripts/prove-search
// highwater.
func (c *KeeperConfig) keepsHighWater() bool {
	return !revert.HighWater && c.HighWater != nil
}

// closeNotice is the instant, notice (the keeper's clock plus its store's
// MaxNoticeWindow), the high-water mark is settled no lower than at
// Close: a claim of the number elsewhere waits that long before its first
// grant, and the next start of this process must not start below it.
// Load-bearing for uniqueness: change only with scripts/prove-search
// highwater.
func closeNotice(notice int64) int64 {
	if revert.HighWater {
		return 0 // the old behaviour: lowered to the last ID issued
	}
	return notice
}
