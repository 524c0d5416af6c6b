package etcdstore_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// TestFreshClaimAfterRestoreWaitsForRunningHolders is issue 25's item 6,
// played with real keepers and generators on a real etcd, each on its own
// fake clock, store and client, as processes would be. A snapshot is taken
// with every number free; holder A claims 9 and issues. etcd is restored
// from the snapshot while A runs — under its old cluster token with the
// revision bumped, under a new token, and with the revision simply falling
// — and holder B, a process started at once, claims: 9 is free in the
// restored store, and B, which never talked to this etcd before, has no
// revision, cluster ID or mark to notice the restore by. A notices only at
// its next renewal, up to 2 s later. Both mint every 250 ms throughout;
// without the notice floor (snowfence_revert_notice) B issues at once and
// mints A's IDs again. With it, B's first grant starts etcd's
// MaxNoticeWindow after its claim, when A has stopped.
func TestFreshClaimAfterRestoreWaitsForRunningHolders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts etcdtest.RestoreOptions
	}{
		{"same token, revision bumped", etcdtest.RestoreOptions{RevisionBump: 1_000_000}},
		{"new token", etcdtest.RestoreOptions{NewClusterToken: true, RevisionBump: 1_000_000}},
		{"revision falls", etcdtest.RestoreOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := etcdtest.Start(t, 1)
			prefix := prefixFor(t)
			t0 := time.Now().Truncate(time.Second)
			snap := c.Snapshot(t)

			clkA := fakeclock.New(t0)
			a := startKeeperHolder(t, c.Client(t), prefix, clkA, "A", lease.Range{Lo: 9, Hi: 9})
			a.issuing() // A's own claim's notice window
			a.mint(100)

			c.Restore(t, snap, tc.opts)
			waitServes(t, a.cli)

			// B starts at once, its clock where A's is.
			clkB := fakeclock.New(clkA.Time())
			b := startKeeperHolder(t, c.Client(t), prefix, clkB, "B", lease.Range{Lo: 9, Hi: 9})
			claimed := clkB.Now().WallMs
			if l := b.k.Lease(); l == nil || l.Machine != 9 {
				t.Fatalf("B holds %+v, want machine 9 (free in the restored store)", l)
			}
			var aLast int64 // when A last issued
			for range 60 {
				aBefore := len(a.ids)
				a.tryMint(100)
				b.tryMint(100)
				if len(a.ids) > aBefore {
					aLast = clkA.Now().WallMs
				}
				a.step(250 * time.Millisecond)
				b.step(250 * time.Millisecond)
			}
			checkNoDuplicates(t, a, b)
			if len(b.ids) == 0 {
				t.Fatalf("B never issued in %v after its claim: %+v", 60*250*time.Millisecond, b.k.Status())
			}
			first := snowfence.V1().TimeOf(b.ids[0]).UnixMilli()
			t.Logf("A last issued %dms after B's claim, B first %dms after it (notice window %s)",
				aLast-claimed, first-claimed, etcdstore.MaxNoticeWindow)
			if floor := claimed + etcdstore.MaxNoticeWindow.Milliseconds(); first < floor {
				t.Errorf("B's first ID stamped %s, want ≥ %s (its claim + etcd's MaxNoticeWindow)", msStr(first), msStr(floor))
			}
			if aLast < claimed {
				t.Errorf("A issued nothing after B's claim: the test shows nothing")
			}
		})
	}
}
