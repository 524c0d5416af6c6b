package k8sstore

import (
	"time"

	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/lease"
)

// Timings returns the keeper timings that suit the store
// (lease.TableTimings): a 5-minute lease renewed every 5 s, issuing
// stopped 4 min 10 s after the last acknowledged renewal, and a 5 s
// margin. The store's lease is a table's — a mark judged by the claimer's
// clock — not an etcd lease that the server expires, so a table's timings
// are the ones that fit (doc.go says why). Apply them to a KeeperConfig
// with lease.Timings.Apply.
func Timings() lease.Timings {
	return lease.TableTimings()
}

// MaxRestoreWindow is the longest restore window a holder of a Kubernetes
// store may have (lease.RestoreWindow of its Reserve and SelfFence: 5 min
// 31 s at the table timings); StartKeeper refuses a longer one.
const MaxRestoreWindow = DefaultRestoreWindow

// MaxRestoreWindow implements lease.Store: the constant MaxRestoreWindow,
// which a library user's Config (the zero TestBound) always has. A test
// fleet's Config.TestBound with a reserve (testbound.Bound.WithMaxReserve)
// shortens it to lease.RestoreWindow of the bound's reserve and self-fence:
// the longest any holder of that fleet may go on issuing once cut off,
// since StartKeeper refuses a holder whose window is longer, and every
// process of the fleet has the same bound (internal/testbound). The
// restore floor (fence_window.go) and raise-marks' shortest --to follow it.
func (s *Store) MaxRestoreWindow() time.Duration {
	if w := boundRestoreWindow(s.cfg.TestBound); w > 0 {
		return w
	}
	return MaxRestoreWindow
}

// boundRestoreWindow is the restore window of a test fleet within b (0:
// b has no reserve, the store's own window applies).
func boundRestoreWindow(b testbound.Bound) time.Duration {
	if b.MaxReserve() <= 0 || b.MaxSelfFence() <= 0 {
		return 0
	}
	return lease.RestoreWindow(b.MaxReserve(), b.MaxSelfFence())
}

// MaxNoticeWindow is the longest notice window (lease.NoticeWindow of the
// self-fence) a holder of a Kubernetes store may have, and the wait before
// the first grant of every claim on one: 4 min 40 s, as for the other
// stores whose expiry is judged by the claimer's clock. At the table
// timings' 4 min 10 s self-fence a holder's window is 4 min 36 s.
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
