package etcdstore_test

import (
	"errors"
	"testing"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestReviewForeignReadNotKnown: a claim reads the mark keys of every
// foreign keyspace it knows marks of, but records only its own keyspace's
// (sawMarks): the newer revisions a foreign read sees are dropped. B's v1
// Store (keyspace 0) claims 0 and renews it, its claim read seeing D's
// mark 5; snapshot; D renews 5. B's v2 sibling (keyspace 65536) claims 2,
// held by E: ErrNoFreeNumber, having read D's mark 5 at its post-snapshot
// revision. A claims v2 1 and renews it. After a restore (same token,
// revision bumped), B's sibling claims 1: it read a mark revision the
// restore took away (as in TestClaimNoticesSeenMarkGone, where a read in
// the own keyspace is enough), yet finds 1 free and markless and starts
// at its clock while A, cut off, may still issue on 1 below its mark.
func TestReviewForeignReadNotKnown(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	now := baseMs()
	d := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	dl := mustExtend(t, d, leasetest.MustClaim(t, d, req("d", 5, 5, now)), now+1000)
	b1 := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	mustExtend(t, b1, leasetest.MustClaim(t, b1, req("b", 0, 0, now)), now+1000)
	e1 := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	e2, err := e1.Keyspace(lease.KeyspaceStride)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	leasetest.MustClaim(t, e2, req("e", 2, 2, now))
	snap := c.Snapshot(t)

	mustExtend(t, d, dl, now+2000) // D's mark 5, rewritten after the snapshot
	b2, err := b1.Keyspace(lease.KeyspaceStride)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if _, err := b2.Claim(ctxFor(t), req("b", 2, 2, now)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Fatalf("B's v2 claim of E's number: %v, want ErrNoFreeNumber", err)
	}
	a1 := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	a2, err := a1.Keyspace(lease.KeyspaceStride)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	mustExtend(t, a2, leasetest.MustClaim(t, a2, req("a", 1, 1, now)), now+5000)

	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitServes(t, c.Client(t))
	l := leasetest.MustClaim(t, b2, req("b", 1, 1, now))
	if l.StartMs < now+etcdstore.MaxRestoreWindow.Milliseconds()/2 {
		t.Fatalf("B's v2 claim after the restore starts at %d, %d ms after now: its earlier claim read keyspace 0's mark 5 at a revision "+
			"the restore took away (not recorded: foreign reads are compared, never remembered), and A may still issue on 1 below %d",
			l.StartMs, l.StartMs-now, now+5000)
	}
}
