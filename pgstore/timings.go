package pgstore

import (
	"time"

	"github.com/snowfence/snowfence/lease"
)

// Timings returns the keeper timings that suit a lease table: a 5-minute
// lease renewed every 10 s, issuing stopped 30 s after the last
// acknowledged renewal, and a 5 s margin, so that nothing is issued at or
// past lease_expiry − 5 s.
//
// In a table the lease is the reservation: Extend writes the mark as the
// new expiry, and the keeper's Reserve defaults to LeaseFor. Renewing every
// 10 s costs one single-row UPDATE per holder every 10 s; the 30 s
// self-fence stops a holder cut off from the table long before its mark.
// A holder's restore window at these timings is 5 min 31 s
// (lease.RestoreWindow), within MaxRestoreWindow and DefaultRestoreWindow.
// The keeper's defaults are an etcd store's; apply these to a KeeperConfig
// for a PostgreSQL store with lease.Timings.Apply.
func Timings() lease.Timings {
	return lease.TableTimings()
}

// MaxNoticeWindow is the longest notice window (lease.NoticeWindow of the
// self-fence) a holder of a PostgreSQL store may have, and the wait before
// the first grant of every claim on one: a holder with a longer self-fence
// is refused at start. At the table timings' 30 s self-fence a holder's
// window is 34 s; 36 s leaves room for a self-fence up to 31.8 s. It is
// kept that close because every claim pays it (a start, a restart, a
// number lost and claimed again refuse for about this long before
// issuing); a shorter self-fence (and renewal period) shortens nothing
// unless this bound is lowered for every holder of the table.
const MaxNoticeWindow = 36 * time.Second

// MaxNoticeWindow implements lease.Store: the constant MaxNoticeWindow.
func (s *Store) MaxNoticeWindow() time.Duration { return MaxNoticeWindow }
