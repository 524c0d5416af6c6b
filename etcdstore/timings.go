package etcdstore

import (
	"time"

	"github.com/snowfence/snowfence/lease"
)

// Timings returns the keeper timings that suit an etcd store, which are
// lease.KeeperConfig's own defaults: an etcd lease TTL of 10 s renewed every
// 2 s, issuing stopped 5 s after the last acknowledged renewal (5 s × 1.08
// stays below 10 s × 0.92, so a holder stops before its owner key can expire
// even with clocks 8 % fast or slow), and no margin, since the mark is
// exclusive and a new holder starts at or above it. A holder's restore
// window at these timings is 12 s, within the store's MaxRestoreWindow.
func Timings() lease.Timings {
	return lease.Timings{
		LeaseFor:   10 * time.Second,
		RenewEvery: 2 * time.Second,
		SelfFence:  5 * time.Second,
	}
}
