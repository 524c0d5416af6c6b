package etcdstore_test

import (
	"testing"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestReviewReleaseWriteNotKnown: B claims 2 and renews it BEFORE the
// snapshot, then — after the snapshot — A claims 1 and B releases 2. B's
// release wrote the mark key of 2 after the backup (so B is a holder that
// "wrote since the backup", which the runbook promises notices a restore),
// but Release's success path records neither in the held lease nor in the
// shared history the revision it wrote: B still knows mark 2 only at its
// pre-snapshot revision, which the restored store has unchanged. After a
// restore (same token, revision bumped) B's claim of 1 finds it free and
// markless and starts at B's clock while A, cut off, may still issue on 1
// below its mark.
func TestReviewReleaseWriteNotKnown(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	now := baseMs()
	b := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	bl := mustExtend(t, b, leasetest.MustClaim(t, b, req("b", 2, 2, now)), now+1000)
	snap := c.Snapshot(t)
	a := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	mustExtend(t, a, leasetest.MustClaim(t, a, req("a", 1, 1, now)), now+5000)
	if err := b.Release(ctxFor(t), bl, now+1000); err != nil {
		t.Fatalf("B's release of 2: %v", err)
	}
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitServes(t, c.Client(t))
	l := leasetest.MustClaim(t, b, req("b", 1, 1, now))
	if l.StartMs < now+b.MaxRestoreWindow().Milliseconds()/2 {
		t.Fatalf("B's claim after the restore starts at %d, %d ms after now: the mark key of 2 B's release wrote after the snapshot "+
			"went back, unnoticed, and A may still issue on 1 below %d", l.StartMs, l.StartMs-now, now+5000)
	}
}
