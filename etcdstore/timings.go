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

// MaxNoticeWindow is the longest notice window (lease.NoticeWindow of the
// self-fence) a holder of an etcd store may have, and the wait before the
// first grant of every claim on one: a holder with a longer self-fence is
// refused at start. At the default 5 s self-fence a holder's window is
// 6.5 s; 8 s leaves room for a self-fence up to 6.36 s. It is kept that
// close because every claim pays it (a start, a restart, a number lost and
// claimed again refuse for about this long before issuing), and a longer
// self-fence than the default buys nothing on etcd.
const MaxNoticeWindow = 8 * time.Second

// MaxNoticeWindow implements lease.Store: the constant MaxNoticeWindow.
func (s *Store) MaxNoticeWindow() time.Duration { return MaxNoticeWindow }
