package etcdstore_test

import (
	"errors"
	"testing"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestClaimNoticesReleasedMarkGone: B claims number 2, renews it and
// releases it, all after the snapshot, and holds nothing when etcd is
// restored (same token, revision bumped) from that snapshot. Meanwhile A
// claimed number 1 after the snapshot too. B wrote since the backup — the
// mark key of 2, twice — so it is one of the holders the store promises
// notice such a restore; but Release forgets the lease and with it the mark
// revision it wrote, and B's only claim read came before any mark existed.
// B's next claim finds 1 free and markless and must not start at its
// clock while A (cut off, say) may still issue on 1 below its mark.
func TestClaimNoticesReleasedMarkGone(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	now := baseMs()
	snap := c.Snapshot(t)
	b := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	bl := mustExtend(t, b, leasetest.MustClaim(t, b, req("b", 2, 2, now)), now+1000)
	a := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	mustExtend(t, a, leasetest.MustClaim(t, a, req("a", 1, 1, now)), now+5000)
	if err := b.Release(ctxFor(t), bl, now+1000); err != nil {
		t.Fatalf("B's release of 2: %v", err)
	}
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitServes(t, c.Client(t))
	l := leasetest.MustClaim(t, b, req("b", 1, 1, now))
	if l.StartMs < now+b.MaxRestoreWindow().Milliseconds()/2 {
		t.Fatalf("B's claim after the restore starts at %d, %d ms after now: the mark key of 2 it wrote after the snapshot is gone, "+
			"and A may still issue on 1 below %d", l.StartMs, l.StartMs-now, now+5000)
	}
}

// TestClaimNoticesSiblingMarkGone is the cutover's form of the same gap:
// keeper B renews its old layout's number 0 after the snapshot, then claims
// in the new layout's keyspace through a sibling Store (Keyspace), which
// shares the restore history but not the marks: the sibling never read the
// new keyspace before, and the marks B wrote are the old keyspace's. B
// either releases 0 first (at the cutover) or still holds and renews it
// (from Lead before the cutover on, the usual shape: then the revision of
// the mark it wrote lives in the parent Store's held lease, not in the
// shared history's marks, which record only what claims read and what
// leases left behind when forgotten). A, cut over earlier, claimed the new
// keyspace's number 1 after the snapshot. After a restore under the same
// token with the revision bumped, B's claim in the new keyspace finds 1
// free and markless; it must not start at its clock while A (cut off, say)
// may still issue on 1 below its mark.
func TestClaimNoticesSiblingMarkGone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		release bool // B releases its old layout's 0 before the restore
	}{
		{"old number released", true},
		{"old number still held", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			siblingMarkGone(t, c.release)
		})
	}
}

func siblingMarkGone(t *testing.T, release bool) {
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	now := baseMs()
	snap := c.Snapshot(t)
	b1 := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	bl := mustExtend(t, b1, leasetest.MustClaim(t, b1, req("b", 0, 0, now)), now+1000)
	bl = mustExtend(t, b1, bl, now+2000)
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
	if release {
		if err := b1.Release(ctxFor(t), bl, now+2000); err != nil {
			t.Fatalf("B's release of its old layout's 0: %v", err)
		}
	}
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitServes(t, c.Client(t))
	l := leasetest.MustClaim(t, b2, req("b", 1, 1, now))
	if l.StartMs < now+etcdstore.MaxRestoreWindow.Milliseconds()/2 {
		t.Fatalf("B's claim in the new keyspace after the restore starts at %d, %d ms after now (old number released: %v): the mark "+
			"key B wrote in the old keyspace after the snapshot is gone, and A may still issue on 1 below %d",
			l.StartMs, l.StartMs-now, release, now+5000)
	}
}

// TestClaimNoticesReleaseWrittenMarkGone: a mark key a release wrote after
// the backup is known to its store, whose next claim after a restore then
// waits the restore window. B claims 2 and renews it BEFORE the snapshot, then — after the snapshot — A claims 1 and B releases 2. B's
// release wrote the mark key of 2 after the backup (so B is a holder that
// "wrote since the backup", which the runbook promises notices a restore),
// but Release's success path once recorded neither in the held lease nor in
// the shared history the revision it wrote: B still knows mark 2 only at its
// pre-snapshot revision, which the restored store has unchanged. After a
// restore (same token, revision bumped) B's claim of 1 finds it free and
// markless and starts at B's clock while A, cut off, may still issue on 1
// below its mark.
func TestClaimNoticesReleaseWrittenMarkGone(t *testing.T) {
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

// TestClaimNoticesForeignReadMarkGone: a mark revision a claim read in a
// foreign keyspace counts, after a restore took it away, as one its own
// keyspace read would. A claim reads the mark keys of every foreign
// keyspace it knows marks of, but recorded only its own keyspace's
// (sawMarks): the newer revisions a foreign read saw were dropped. B's v1
// Store (keyspace 0) claims 0 and renews it, its claim read seeing D's
// mark 5; snapshot; D renews 5. B's v2 sibling (keyspace 65536) claims 2,
// held by E: ErrNoFreeNumber, having read D's mark 5 at its post-snapshot
// revision. A claims v2 1 and renews it. After a restore (same token,
// revision bumped), B's sibling claims 1: it read a mark revision the
// restore took away (as in TestClaimNoticesSeenMarkGone, where a read in
// the own keyspace is enough), yet finds 1 free and markless and starts
// at its clock while A, cut off, may still issue on 1 below its mark.
func TestClaimNoticesForeignReadMarkGone(t *testing.T) {
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
