package etcdstore_test

import (
	"testing"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestClaimNoticesSiblingHeldMarkGone is the cutover's usual shape: keeper
// B still holds (and keeps renewing) its old layout's number 0 when it
// claims its new layout's number through a sibling Store (Keyspace), as a
// keeper does from Lead before the cutover on. B renewed 0 after the
// snapshot, so its process knows a mark written since; but that revision
// lives in the parent Store's held lease, not in the shared history's
// marks, which record only what claims read and what leases left behind
// when forgotten. A, cut over earlier, claimed the new keyspace's number
// 1 after the snapshot. After a restore under the same token with the
// revision bumped, B's claim in the new keyspace finds 1 free and
// markless; it must not start at its clock while A (cut off, say) may
// still issue on 1 below its mark.
func TestClaimNoticesSiblingHeldMarkGone(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	now := baseMs()
	snap := c.Snapshot(t)
	b1 := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	bl := mustExtend(t, b1, leasetest.MustClaim(t, b1, req("b", 0, 0, now)), now+1000)
	mustExtend(t, b1, bl, now+2000) // held, never released
	b2, err := b1.Keyspace(lease.KeyspaceStride)
	if err != nil {
		t.Fatalf("Keyspace: %v", err)
	}
	defer b2.Close()
	a1 := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	a2, err := a1.Keyspace(lease.KeyspaceStride)
	if err != nil {
		t.Fatalf("Keyspace: %v", err)
	}
	defer a2.Close()
	mustExtend(t, a2, leasetest.MustClaim(t, a2, req("a", 1, 1, now)), now+5000)
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitServes(t, c.Client(t))
	l := leasetest.MustClaim(t, b2, req("b", 1, 1, now))
	if l.StartMs < now+etcdstore.MaxRestoreWindow.Milliseconds()/2 {
		t.Fatalf("B's claim in the new keyspace after the restore starts at %d, %d ms after now, while B still holds its old "+
			"keyspace's number 0 whose mark it wrote after the snapshot (gone now); A may still issue on 1 below %d",
			l.StartMs, l.StartMs-now, now+5000)
	}
}
