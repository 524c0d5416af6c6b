package etcdstore_test

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestRestoreFencesEarlierLeases restores etcd from a snapshot taken while
// lease a was held and before lease b was claimed. Both are fenced with
// ErrRestored — a, whose owner key survived in the restored data, too — and
// a claim afterwards starts RestoreMargin after the moment the restore was
// noticed, on the claimer's clock (the store's Config.Clock measures the
// time since; the claim's NowMs is the claimer's clock).
func TestRestoreFencesEarlierLeases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts etcdtest.RestoreOptions
	}{
		{"revision falls", etcdtest.RestoreOptions{}},
		{"cluster ID changes", etcdtest.RestoreOptions{NewClusterToken: true, RevisionBump: 100000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := etcdtest.Start(t, 1)
			clk := fakeclock.New(time.Now().Truncate(time.Millisecond))
			s := newStore(t, c.Client(t), etcdstore.Config{RestoreMargin: time.Minute, Clock: clk})
			now := clk.Now().WallMs
			a := mustExtend(t, s, leasetest.MustClaim(t, s, req("a", 0, 0, now)), now+1000)
			snap := c.Snapshot(t)
			b := mustExtend(t, s, leasetest.MustClaim(t, s, req("b", 1, 1, now)), now+1000)
			for i := range 5 {
				a = mustExtend(t, s, a, now+2000+int64(i))
			}
			c.Restore(t, snap, tc.opts)
			clk.Advance(time.Second)
			noticed := clk.Now().WallMs

			_, err := s.Extend(ctxFor(t), a, now+3000, 10*time.Second)
			if !errors.Is(err, lease.ErrRestored) {
				t.Fatalf("Extend of a lease claimed before the restore: %v, want ErrRestored", err)
			}
			t.Logf("operator sees: %v", err)
			if err := s.Release(ctxFor(t), b, now); !errors.Is(err, lease.ErrRestored) {
				t.Errorf("Release of a lease claimed before the restore: %v, want ErrRestored", err)
			}
			if _, err := s.Extend(ctxFor(t), b, now+3000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
				t.Errorf("Extend of a lease lost by the restore: %v, want ErrRestored", err)
			}
			clk.Advance(5 * time.Second)
			l := leasetest.MustClaim(t, s, req("c", 2, 2, clk.Now().WallMs))
			if floor := noticed + time.Minute.Milliseconds(); l.StartMs < floor {
				t.Errorf("claim after the restore starts at %d, want ≥ %d (noticed + RestoreMargin)", l.StartMs, floor)
			}
			mustExtend(t, s, l, l.StartMs+1000) // leases of the new history work
		})
	}
}

// TestRestoreInvisibleNeedsRaiseMarks: a restore that keeps the cluster
// token and bumps the revision changes neither the cluster ID nor makes
// the revision fall (and on a cluster that never had a second election,
// not the raft term either). A holder that wrote its mark after the
// snapshot notices at its next renewal — the mark key it wrote is gone —
// but a process that wrote nothing since the snapshot, one that starts
// after the restore say, cannot: to it, a number claimed after the
// snapshot comes back free with its old mark (until its holder notices
// and writes the mark back), and a claim starts at its own clock. Only the
// operator's RaiseMarks, run before holders claim again, keeps the next
// holder of every number above what was issued in the lost history — the
// runbook's step.
func TestRestoreInvisibleNeedsRaiseMarks(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Client(t), etcdstore.Config{})
	now := baseMs()
	snap := c.Snapshot(t)
	lost := mustExtend(t, s, leasetest.MustClaim(t, s, req("lost", 0, 0, now)), now+5000)
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 100000})
	waitServes(t, c.Client(t))

	fresh := newStore(t, c.Client(t), etcdstore.Config{})
	if rec := leasetest.MustGet(t, fresh, 0); rec.Held() || rec.MarkMs >= lost.MarkMs {
		t.Fatalf("restored record %+v: want it free with a mark below the lost holder's %d (else this test shows nothing)", rec, lost.MarkMs)
	}
	blind := leasetest.MustClaim(t, fresh, req("blind", 1, 1, now))
	if blind.StartMs != now {
		t.Fatalf("a store that never wrote before the restore starts a claim at %d, want its clock %d: it cannot tell", blind.StartMs, now)
	}
	if _, err := s.Extend(ctxFor(t), lost, now+6000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("Extend of a lease whose mark the restore dropped: %v, want ErrRestored", err)
	}

	raised := lost.MarkMs + 1000
	if n, err := fresh.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 63}, raised); err != nil || n != 64 {
		t.Fatalf("RaiseMarks = %d, %v; want 64, nil", n, err)
	}
	if _, err := fresh.Extend(ctxFor(t), blind, now+1000, 10*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Extend of a claim made before RaiseMarks: %v, want ErrLost", err)
	}
	for n := range 2 {
		if l := leasetest.MustClaim(t, fresh, req("next", n, n, now)); l.StartMs < raised {
			t.Errorf("claim of %d after RaiseMarks starts at %d, want ≥ the raised mark %d", n, l.StartMs, raised)
		}
	}
}

// TestRaiseMarksFencesSurvivingHolder: a holder whose claim is in the
// snapshot and who wrote nothing since finds its keys in the restored
// store exactly as it left them, so it cannot tell, and extends again.
// Another holder may have held its number in the history the restore lost
// (its lease lapsed in a pause, say) and issued above its mark there.
// RaiseMarks, the operator's step, deletes every owner key with the raise:
// the survivor's next extension fails, and it claims again above the mark.
func TestRaiseMarksFencesSurvivingHolder(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Client(t), etcdstore.Config{})
	now := baseMs()
	survivor := mustExtend(t, s, leasetest.MustClaim(t, s, req("survivor", 0, 0, now)), now+1000)
	snap := c.Snapshot(t)
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 100000})
	waitServes(t, c.Client(t))
	survivor = mustExtend(t, s, survivor, now+2000) // invisible to it

	raised := now + time.Minute.Milliseconds()
	op := newStore(t, c.Client(t), etcdstore.Config{})
	if n, err := op.RaiseMarks(ctxFor(t), lease.Range{Lo: 0, Hi: 3}, raised); err != nil || n != 4 {
		t.Fatalf("RaiseMarks = %d, %v; want 4, nil", n, err)
	}
	if _, err := s.Extend(ctxFor(t), survivor, now+3000, 10*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Extend of the surviving claim after RaiseMarks: %v, want ErrLost", err)
	}
	if rec := leasetest.MustGet(t, op, 0); rec.Held() {
		t.Errorf("record after RaiseMarks %+v, want no holder", rec)
	}
	if l := leasetest.MustClaim(t, s, req("survivor", 0, 0, now)); l.StartMs < raised {
		t.Errorf("the survivor's new claim starts at %d, want ≥ the raised mark %d", l.StartMs, raised)
	}
}

// TestRestoreNoticedByRaftTerm: a restored etcd starts a new raft log, its
// term back at 2, while the cluster it replaces had had more elections. A
// holder that wrote nothing since the snapshot finds its keys as it left
// them, but the raft term of the next response has fallen: a restore.
func TestRestoreNoticedByRaftTerm(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	for range 2 { // each restart is an election, a higher term
		c.Stop(0)
		c.Restart(t, 0)
	}
	waitServes(t, cli)
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	l := mustExtend(t, s, leasetest.MustClaim(t, s, req("h", 0, 0, now)), now+1000)
	termBefore := raftTerm(t, cli)
	snap := c.Snapshot(t)
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 100000})
	waitServes(t, cli)
	if after := raftTerm(t, cli); after >= termBefore {
		t.Fatalf("raft term %d after the restore, %d before: want it lower (else this test shows nothing)", after, termBefore)
	}
	if _, err := s.Extend(ctxFor(t), l, now+2000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("Extend after a restore that lowered the raft term: %v, want ErrRestored", err)
	}
}

// raftTerm reads etcd's raft term from a response header.
func raftTerm(t *testing.T, cli *clientv3.Client) uint64 {
	t.Helper()
	resp, err := cli.Get(ctxFor(t), "/raftTerm")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.RaftTerm
}

// TestRestoreRepeatedTokenNoticedByEtcdLease: restored without a revision
// bump, etcd's revision falls and climbs again, and a later claim of the
// same number can get the very create revision — the token — a lost claim
// had, with the mark key at the very mod revision the lost holder last
// wrote. A store that saw nothing in between cannot tell by revisions; the
// owner key's etcd lease tells. The lost holder's Extend must fail with
// ErrRestored, not extend the other claim.
func TestRestoreRepeatedTokenNoticedByEtcdLease(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	s := newStore(t, cli, etcdstore.Config{})
	now := baseMs()
	snap := c.Snapshot(t)
	lost := leasetest.MustClaim(t, s, req("lost", 0, 0, now))
	lost = mustExtend(t, s, lost, now+1000) // mark written at token+1
	c.Restore(t, snap, etcdtest.RestoreOptions{})
	waitServes(t, cli)

	// Replay the revisions up to the lost claim's, then claim and extend
	// number 0 again from another store: the owner key gets the same
	// create revision, the mark key the same mod revision.
	other := newStore(t, cli, etcdstore.Config{})
	for range 100 {
		resp, err := cli.Get(ctxFor(t), "/filler")
		if err != nil {
			t.Fatal(err)
		}
		if resp.Header.Revision >= int64(lost.Token)-1 {
			break
		}
		if _, err := cli.Put(ctxFor(t), "/filler", "x"); err != nil {
			t.Fatal(err)
		}
	}
	again := leasetest.MustClaim(t, other, req("again", 0, 0, now))
	if again.Token != lost.Token {
		t.Fatalf("the new claim's token %d, want the lost claim's %d (else this test shows nothing)", again.Token, lost.Token)
	}
	mustExtend(t, other, again, now+1000)

	if _, err := s.Extend(ctxFor(t), lost, now+2000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("Extend of the lost claim whose token came back on another claim: %v, want ErrRestored", err)
	}
	if err := s.Release(ctxFor(t), lost, now); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("Release of the lost claim: %v, want ErrRestored", err)
	}
	if rec := leasetest.MustGet(t, other, 0); rec.Holder != "again" || rec.Token != again.Token || rec.MarkMs != now+1000 {
		t.Errorf("record after the lost holder's attempts %+v, want the new claim untouched (mark %d)", rec, now+1000)
	}
}

// TestClaimNoticesOwnMarkGoneBack: a store with a lease whose mark it
// wrote after the snapshot notices the restore at its next claim of
// another number — the region's read shows that mark key gone — and the
// claim starts after the restore window, as do claims of other keepers
// sharing the store.
func TestClaimNoticesOwnMarkGoneBack(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	clk := fakeclock.New(time.Now().Truncate(time.Millisecond))
	s := newStore(t, c.Client(t), etcdstore.Config{Clock: clk})
	now := clk.Now().WallMs
	snap := c.Snapshot(t)
	held := mustExtend(t, s, leasetest.MustClaim(t, s, req("k1", 0, 0, now)), now+1000)
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 100000})
	waitServes(t, c.Client(t))

	l := leasetest.MustClaim(t, s, req("k2", 1, 1, now))
	if floor := now + etcdstore.DefaultRestoreMargin.Milliseconds(); l.StartMs < floor {
		t.Errorf("claim after the restore starts at %d, want ≥ %d", l.StartMs, floor)
	}
	if _, err := s.Extend(ctxFor(t), held, now+2000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("Extend of the lease whose mark went back: %v, want ErrRestored", err)
	}
}

// TestRestoreNoticedWritesBackLostMark: the holder that notices a restore
// by the mark it wrote knows better than the restored store how far it
// reserved, and writes that mark back. A holder that did not notice — its
// own keys came through the restore untouched — and takes the number next
// then starts above every timestamp the first may have issued, not at the
// mark the restore lost.
func TestRestoreNoticedWritesBackLostMark(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Client(t), etcdstore.Config{})
	now := baseMs()
	snap := c.Snapshot(t)
	x := mustExtend(t, s, leasetest.MustClaim(t, s, req("X", 8, 8, now)), now+10000)
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 100000})
	waitServes(t, c.Client(t))

	if _, err := s.Extend(ctxFor(t), x, now+12000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("Extend after the restore: %v, want ErrRestored", err)
	}
	unaware := newStore(t, c.Client(t), etcdstore.Config{})
	if rec := leasetest.MustGet(t, unaware, 8); rec.MarkMs < x.MarkMs {
		t.Errorf("mark of 8 after the restore was noticed: %d, want the noticing holder's %d written back", rec.MarkMs, x.MarkMs)
	}
	if l := leasetest.MustClaim(t, unaware, req("A", 8, 8, now)); l.StartMs < x.MarkMs {
		t.Errorf("an unaware holder's claim of 8 starts at %d, below the mark %d the first holder reserved", l.StartMs, x.MarkMs)
	}
}

// TestRestoreNoticedByRecreatedMark: the sequence the long search found. A
// holds machine 1, claimed after the snapshot; etcd is restored from it
// (same token, revision bumped), which takes A's keys away; B, a store that
// never saw the old history, claims 1 and writes its mark anew, at
// revisions the bump put past the ones A saw. A's next renewal finds
// another owner and a higher mark, which alone is a plain loss; but its
// mark key was created after A last saw it, and marks are never deleted:
// a restore, so A's next claims keep the restore floor.
func TestRestoreNoticedByRecreatedMark(t *testing.T) {
	t.Parallel()
	a, la, now := recreatedMark(t)
	if _, err := a.Extend(ctxFor(t), la, now+3000, 10*time.Second); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("A's renewal after its mark key was created anew: %v, want ErrRestored", err)
	}
}

// TestClaimNoticesRecreatedMark is TestRestoreNoticedByRecreatedMark seen
// from a claim instead of a renewal: A, holding machine 1, claims another
// number after the restore and B's claim of 1 wrote 1's mark key anew at a
// revision above the one A knew. The claim's read of the region is the
// only sign A gets (its renewal has not failed yet), so the new claim must
// start after the restore window, not now.
func TestClaimNoticesRecreatedMark(t *testing.T) {
	t.Parallel()
	a, _, now := recreatedMark(t)
	l2 := leasetest.MustClaim(t, a, req("a", 2, 2, now))
	if l2.StartMs < now+a.MaxRestoreWindow().Milliseconds()/2 {
		t.Fatalf("A's claim after machine 1's mark key was created anew starts at %d, %d ms after now: "+
			"the claim's read did not notice the restore", l2.StartMs, l2.StartMs-now)
	}
}

// recreatedMark plays the two tests above up to where they differ: after a
// snapshot A claims machine 1 and renews it twice; etcd is restored from
// the snapshot (same token, revision bumped); B, a new store, claims 1 and
// renews it, writing 1's mark key anew. It returns A's store, A's lease and
// the clock reading the test started at.
func recreatedMark(t *testing.T) (*etcdstore.Store, *lease.Lease, int64) {
	t.Helper()
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	now := baseMs()
	snap := c.Snapshot(t)
	a := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	la := mustExtend(t, a, leasetest.MustClaim(t, a, req("a", 1, 1, now)), now+1000)
	la = mustExtend(t, a, la, now+2000)
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitServes(t, c.Client(t))
	b := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	lb := leasetest.MustClaim(t, b, req("b", 1, 1, now))
	mustExtend(t, b, lb, now+5000)
	return a, la, now
}

// TestClaimNoticesSeenMarkGone: B holds nothing — its claim found the only
// number, 1, held by A — when etcd is restored (same token, revision
// bumped) from a snapshot taken before A claimed. To B the number now looks
// free and markless, and B wrote nothing that the restore took away; only
// the mark key its failed claim read is gone. B's claim must notice, and
// start a restore window on, not at its clock, while A (cut off, say) may
// still issue on 1 (found by the search: a keeper whose old layout's number
// was released at a cutover and whose claim for the new one found the
// range full).
func TestClaimNoticesSeenMarkGone(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	now := baseMs()
	snap := c.Snapshot(t)
	a := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	mustExtend(t, a, leasetest.MustClaim(t, a, req("a", 1, 1, now)), now+5000)
	b := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	if _, err := b.Claim(ctxFor(t), req("b", 1, 1, now)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Fatalf("B's claim of A's number: %v, want ErrNoFreeNumber", err)
	}
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitServes(t, c.Client(t))
	l := leasetest.MustClaim(t, b, req("b", 1, 1, now))
	if l.StartMs < now+b.MaxRestoreWindow().Milliseconds()/2 {
		t.Fatalf("B's claim after the restore starts at %d, %d ms after now: the mark key its earlier claim read is gone, "+
			"and A may still issue below %d", l.StartMs, l.StartMs-now, now+5000)
	}
}
