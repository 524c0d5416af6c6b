package etcdstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestRestoreFloorFollowsClaimersWindow is issue 10's fourth path: after a
// restore is noticed, a claim starts a restore window (how long a holder
// cut off from the store may go on issuing) after the moment of noticing,
// on the claimer's clock — not the store's fixed 10 s margin on the system
// clock, which a keeper with a 20 s self-fence outlasts. The window is the
// longest of the claimer's own (ClaimRequest.RestoreWindow), the store's
// MaxRestoreWindow (the cut-off holder may be another process, with longer
// timings than the claimer's; no keeper on etcd may have a longer one) and
// Config.RestoreMargin. The claimers' clock here runs an hour ahead of the
// system clock, as a fake (or a skewed host's) may.
func TestRestoreFloorFollowsClaimersWindow(t *testing.T) {
	t.Parallel()
	const window = 25 * time.Second
	c := etcdtest.Start(t, 1)
	clk := fakeclock.New(time.Now().Add(time.Hour).Truncate(time.Millisecond))
	byWindow := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefixFor(t) + "/window", Clock: clk})
	longer := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefixFor(t) + "/margin", Clock: clk, RestoreMargin: 50 * time.Second})
	now := clk.Now().WallMs
	leases := map[*etcdstore.Store]*lease.Lease{}
	for _, s := range []*etcdstore.Store{byWindow, longer} {
		leases[s] = mustExtend(t, s, leasetest.MustClaim(t, s, req("before", 0, 0, now)), now+1000)
	}
	snap := c.Snapshot(t)
	c.Restore(t, snap, etcdtest.RestoreOptions{NewClusterToken: true})
	waitServes(t, c.Client(t))
	clk.Advance(time.Second)
	noticed := clk.Now().WallMs
	for s, l := range leases {
		if _, err := s.Extend(ctxFor(t), l, noticed+1000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
			t.Fatalf("Extend after the restore: %v, want ErrRestored", err)
		}
	}
	clk.Advance(5 * time.Second)
	claim := func(s *etcdstore.Store, n int, w time.Duration) *lease.Lease {
		t.Helper()
		r := req("after", n, n, clk.Now().WallMs)
		r.RestoreWindow = w
		return leasetest.MustClaim(t, s, r)
	}
	for _, tc := range []struct {
		name string
		s    *etcdstore.Store
		n    int
		w    time.Duration
		want time.Duration
	}{
		{"the claimer's window, shorter than the fleet's", byWindow, 1, window, etcdstore.MaxRestoreWindow},
		{"no window: the fleet's", byWindow, 2, 0, etcdstore.MaxRestoreWindow},
		{"the claimer's window, longer", byWindow, 4, 45 * time.Second, 45 * time.Second},
		{"Config.RestoreMargin, longer", longer, 1, window, 50 * time.Second},
		{"the claimer's, longer still", longer, 2, 55 * time.Second, 55 * time.Second},
	} {
		l := claim(tc.s, tc.n, tc.w)
		if floor := noticed + tc.want.Milliseconds(); l.StartMs < floor || l.StartMs > floor+1 {
			t.Errorf("%s: claim starts %v after the restore was noticed, want %v", tc.name,
				time.Duration(l.StartMs-noticed)*time.Millisecond, tc.want)
		}
	}
	// Once the window has passed since the notice, claims start at the
	// claimer's clock again.
	clk.Advance(etcdstore.MaxRestoreWindow)
	if l := claim(byWindow, 3, window); l.StartMs != clk.Now().WallMs {
		t.Errorf("claim %v after the notice, past the window, starts %v after the clock, want at it",
			time.Duration(clk.Now().WallMs-noticed)*time.Millisecond, time.Duration(l.StartMs-clk.Now().WallMs)*time.Millisecond)
	}
}
