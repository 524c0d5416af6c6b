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

// TestCutoverClaimAfterRestoreWhileOldNumberHeld plays the sibling gap
// with two real keepers across a cutover v1,v2@T, each its own process
// (store, client, clock). Snapshot (the fleet schedule already set). A
// blocker takes v2 number 2; keeper B starts, claims v1 6 (reserving, so
// writing its mark after the snapshot) and fails to claim v2 2, retrying
// at a quarter of its renewal pace. The blocker goes; keeper A starts and
// takes v1 5 and v2 2. etcd is restored from the snapshot under its old
// token with the revision bumped. B's v2 retry comes before its v1
// renewal: its sibling Store for v2 knows no v2 mark, and the v1 mark B
// wrote after the snapshot sits in the parent Store's held lease, out of
// the shared history's marks; so the claim finds 2 free and starts at B's
// clock, past T. A, not yet at its renewal, mints on v2 2 in the same
// milliseconds.
func TestCutoverClaimAfterRestoreWhileOldNumberHeld(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	t0 := time.Now().Truncate(time.Second)
	T := t0.Add(2400 * time.Millisecond)
	sched := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: T, Layout: snowfence.V2()})
	admin := newStore(t, c.Client(t), etcdstore.Config{Prefix: prefix})
	if _, err := admin.SetFleetSchedule(ctxFor(t), 0, sched.String()); err != nil {
		t.Fatal(err)
	}
	snap := c.Snapshot(t)

	v2admin, err := admin.Keyspace(lease.KeyspaceStride)
	if err != nil {
		t.Fatal(err)
	}
	defer v2admin.Close()
	if _, err := v2admin.Claim(ctxFor(t), lease.ClaimRequest{Holder: "blocker", Range: lease.Range{Lo: 2, Hi: 2}, NowMs: t0.UnixMilli(),
		LeaseFor: time.Hour, MaxAhead: time.Hour, Schedule: sched.String()}); err != nil {
		t.Fatal(err)
	}
	start := func(name string, clk *fakeclock.Clock, v1, v2 int) *keeperHolder {
		return startKeeper(t, c.Client(t), prefix, clk, lease.KeeperConfig{Holder: name, Range: &lease.Range{Lo: v1, Hi: v1},
			LayoutRanges: map[string]lease.Range{"v2": {Lo: v2, Hi: v2}}, Schedule: sched})
	}
	clkA, clkB := fakeclock.New(t0), fakeclock.New(t0)
	b := start("B", clkB, 6, 2)
	// B's first turn: it renews v1 6 and fails to claim v2 2, which it
	// retries 500 ms on; its next v1 renewal is 2 s on.
	b.step(2 * time.Second)
	// The blocker's lease ends (its owner key goes, as at expiry).
	if _, err := c.Client(t).Delete(ctxFor(t), prefix+"/65536/owner/2"); err != nil {
		t.Fatal(err)
	}
	a := start("A", clkA, 5, 2)
	// A's first turn: it renews v1 5 and claims v2 2.
	a.step(2 * time.Second)
	t.Logf("A: %+v", a.k.Status())
	t.Logf("B: %+v", b.k.Status())

	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitServes(t, a.cli)
	waitServes(t, b.cli)

	a.clk.Advance(500 * time.Millisecond) // past T, before A's renewal
	a.settle()
	b.step(500 * time.Millisecond) // B's v2 retry, before its v1 renewal
	t.Logf("B after its retry: %+v", b.k.Status())
	a.tryMint(1000)
	b.tryMint(1000)
	checkNoDuplicatesIn(t, sched, a, b)
}

// checkNoDuplicatesIn is checkNoDuplicates, decoding with sched.
func checkNoDuplicatesIn(t *testing.T, sched snowfence.Schedule, hs ...*keeperHolder) {
	t.Helper()
	seen := map[snowfence.ID]int{}
	dups := 0
	for i, h := range hs {
		for _, id := range h.ids {
			if j, ok := seen[id]; ok && j != i {
				if dups < 3 {
					d, _ := sched.Decode(id)
					t.Errorf("ID %d (%+v) issued by holder %d and holder %d", id, d, j, i)
				}
				dups++
			}
			seen[id] = i
		}
	}
	if dups > 0 {
		t.Errorf("%d IDs issued twice", dups)
	}
	t.Logf("%d and %d IDs checked", len(hs[0].ids), len(hs[1].ids))
}
