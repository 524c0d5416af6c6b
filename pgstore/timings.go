package pgstore

import (
	"time"

	"github.com/snowfence/snowfence/lease"
)

// Timings returns the keeper timings that suit a lease table
// (lease.TableTimings): a 5-minute lease renewed every 5 s, issuing stopped
// 4 min 10 s after the last acknowledged renewal, and a 5 s margin, so that
// nothing is issued at or past lease_expiry − 5 s.
//
// In a table the lease is the reservation: Extend writes the mark as the
// new expiry, and the keeper's Reserve defaults to LeaseFor. Renewing every 5 s costs one
// single-row UPDATE per holder every 5 s. The self-fence follows the lease:
// a holder cut off from the table rides out an outage of up to about 4
// minutes and refuses before its lease expires, with clocks 8 % fast or
// slow (lease.TableTimings says how it is derived). A holder's restore
// window at these timings is 5 min 31 s (lease.RestoreWindow), within
// MaxRestoreWindow; its notice window is 4 min 36 s, within MaxNoticeWindow.
// The keeper's defaults are an etcd store's; apply these to a KeeperConfig
// for a PostgreSQL store with lease.Timings.Apply.
func Timings() lease.Timings {
	return lease.TableTimings()
}

// MaxNoticeWindow is the longest notice window (lease.NoticeWindow of the
// self-fence) a holder of a PostgreSQL store may have, and the wait before
// the first grant of every claim on one: a holder with a longer self-fence
// is refused at start. At the table timings' 4 min 10 s self-fence a
// holder's window is 4 min 36 s; 4 min 40 s leaves room for a self-fence up
// to 4 min 13.6 s. It is that long because the self-fence follows the
// lease (a holder cut off from the table issues for up to 4 min 10 s, and
// a claim of its number from a table restored or failed over behind its
// back must not start issuing before it stops), and every claim pays it: a
// start, a restart, a number lost and claimed again refuse for about this
// long before issuing. A shorter self-fence shortens nothing: the bound is
// what the other holders of the table may have, and nothing in the table
// records a shorter one (docs/lease-stores.md#outages).
const MaxNoticeWindow = 4*time.Minute + 40*time.Second

// MaxNoticeWindow implements lease.Store: the constant MaxNoticeWindow (a
// test fleet's Config.TestBound shortens it to lease.NoticeWindow of its
// bound).
func (s *Store) MaxNoticeWindow() time.Duration {
	if b := s.cfg.TestBound.MaxSelfFence(); b > 0 {
		return lease.NoticeWindow(b)
	}
	return MaxNoticeWindow
}
