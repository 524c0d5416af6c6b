package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestRestoreSameTokenBumpedNoticedByMark is issue 10's third path, played
// with two real keepers and generators, each on its own fake clock, store
// and client, as two processes would be. Snapshot; A claims 9, X claims 8;
// etcd is restored from the snapshot under its old cluster token with the
// revision bumped, so neither the cluster ID nor the revision tells. X
// renews first and finds its owner key gone; A still holds its grant until
// its own renewal and mints on 9. If X took that for a plain loss it would
// claim 9 at once (free in the restored store) starting at its own clock,
// and mint A's IDs again. X's store must see that the mark it wrote for 8
// vanished — marks are never deleted — and treat it as a restore: X's next
// lease starts after the restore window, above every timestamp A may still
// issue on 9.
func TestRestoreSameTokenBumpedNoticedByMark(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	t0 := time.Now().Truncate(time.Second)
	snap := c.Snapshot(t)

	// X's clock is a second behind A's, so that X's renewals fall one
	// second before A's: X notices first, as in the issue.
	clkA, clkX := fakeclock.New(t0), fakeclock.New(t0.Add(-time.Second))
	a := startKeeperHolder(t, c.Client(t), prefix, clkA, "A", lease.Range{Lo: 9, Hi: 9})
	x := startKeeperHolder(t, c.Client(t), prefix, clkX, "X", lease.Range{Lo: 8, Hi: 9})
	if m := x.k.Status().Machine; m != 8 {
		t.Fatalf("X holds %d, want 8", m)
	}
	// Each waits out its claim's notice window (8 s, four renewals: the
	// phases stay as they were).
	a.issuing()
	x.issuing()
	x.step(time.Second) // both clocks now read alike
	a.mint(100)
	x.mint(100)

	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitServes(t, a.cli)
	waitServes(t, x.cli)

	// One second on: X's renewal is due, A's is not.
	a.step(time.Second)
	x.step(time.Second)
	st := x.k.Status()
	if st.Losses != 1 || !strings.Contains(st.LastError, lease.ErrRestored.Error()) {
		t.Errorf("X after its renewal: status %+v, want one loss with ErrRestored", st)
	}
	if st.Machine != 9 {
		t.Logf("X re-claimed %d (9 is the dangerous one; the checks hold either way)", st.Machine)
	}
	noticedMs := clkX.Now().WallMs
	// A, unaware, mints on 9 in the milliseconds X would start in.
	a.mint(100)
	x.tryMint(100)
	a.clk.Advance(900 * time.Millisecond) // still before A's renewal
	a.mint(100)
	x.tryMint(100)

	// A's renewal finds 9 taken (or the restore) and stops it; X's lease
	// starts once its clock reaches the floor.
	a.step(time.Second)
	if _, err := a.g.Next(context.Background()); !errors.Is(err, snowfence.ErrFenced) {
		t.Errorf("A after its renewal: %v, want ErrFenced", err)
	}
	for i := 0; i < 60 && !x.canMint(); i++ {
		x.step(time.Second)
	}
	first := x.mint(100)[0]
	firstMs := snowfence.V1().TimeOf(first).UnixMilli()
	if floor := noticedMs + etcdstore.MaxRestoreWindow.Milliseconds(); firstMs < floor {
		t.Errorf("X's first ID after the restore stamped %s, want ≥ %s (noticed + the restore window)", msStr(firstMs), msStr(floor))
	}
	checkNoDuplicates(t, a, x)
}

// keeperHolder is a keeper and its generator on a store of their own.
type keeperHolder struct {
	t   *testing.T
	cli *clientv3.Client
	clk *fakeclock.Clock
	k   *lease.Keeper
	g   *snowfence.Generator
	ids []snowfence.ID
}

// startKeeperHolder starts a keeper (default timings) and a generator on
// clk, with a store of their own on cli under prefix.
func startKeeperHolder(t *testing.T, cli *clientv3.Client, prefix string, clk *fakeclock.Clock, name string, rng lease.Range) *keeperHolder {
	t.Helper()
	return startKeeper(t, cli, prefix, clk, lease.KeeperConfig{Holder: name, Range: &rng})
}

// startKeeper starts a keeper of kc (its Store and Clock filled in: a
// store of its own on cli and clk) and a generator on it under
// kc.Schedule, and waits until the keeper sleeps on the clock.
func startKeeper(t *testing.T, cli *clientv3.Client, prefix string, clk *fakeclock.Clock, kc lease.KeeperConfig) *keeperHolder {
	t.Helper()
	kc.Store, kc.Clock = newStore(t, cli, etcdstore.Config{Prefix: prefix, Clock: clk}), clk
	k, err := leasetest.StartKeeper(ctxFor(t), kc)
	if err != nil {
		t.Fatalf("StartKeeper(%s): %v", kc.Holder, err)
	}
	var g *snowfence.Generator
	t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
	g, err = snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff, Schedule: kc.Schedule})
	if err != nil {
		t.Fatal(err)
	}
	h := &keeperHolder{t: t, cli: cli, clk: clk, k: k, g: g}
	h.settle()
	return h
}

// settle waits until the keeper's loop sleeps on the clock.
func (h *keeperHolder) settle() {
	h.t.Helper()
	if err := h.clk.BlockUntilWaiters(ctxFor(h.t), 1); err != nil {
		h.t.Fatalf("keeper never went back to sleep: %v", err)
	}
}

// step lets d pass on the holder's clock and waits for its keeper to act.
func (h *keeperHolder) step(d time.Duration) {
	h.t.Helper()
	h.settle()
	h.clk.Advance(d)
	h.settle()
}

// issuing lets the holder's clock run in 250 ms steps until its grant has
// started: every claim's first grant waits out the store's notice window
// (lease.Store.MaxNoticeWindow).
func (h *keeperHolder) issuing() {
	h.t.Helper()
	for i := 0; !h.canMint(); i++ {
		if i == 400 {
			h.t.Fatalf("no grant started within %v: %+v", 400*250*time.Millisecond, h.k.Status())
		}
		h.step(250 * time.Millisecond)
	}
}

// mint takes n IDs, failing the test on a refusal.
func (h *keeperHolder) mint(n int) []snowfence.ID {
	h.t.Helper()
	ids, err := h.g.NextN(context.Background(), n)
	if err != nil {
		h.t.Fatalf("NextN: %v (keeper %+v)", err, h.k.Status())
	}
	h.ids = append(h.ids, ids...)
	return ids
}

// tryMint takes n IDs if the generator grants them now; a refusal is no
// failure (it is the fence working).
func (h *keeperHolder) tryMint(n int) {
	if ids, err := h.g.NextN(context.Background(), n); err == nil {
		h.ids = append(h.ids, ids...)
	}
}

// canMint reports whether the keeper's grant lets the generator issue at
// the clock's time now.
func (h *keeperHolder) canMint() bool {
	g, err := h.k.Grant()
	return err == nil && h.clk.Now().WallMs >= g.StartMs && h.clk.Now().WallMs < g.LimitMs
}

// checkNoDuplicates fails the test for every ID that two holders issued.
func checkNoDuplicates(t *testing.T, hs ...*keeperHolder) {
	t.Helper()
	seen := map[snowfence.ID]int{}
	dups := 0
	total := 0
	for i, h := range hs {
		for _, id := range h.ids {
			total++
			if j, ok := seen[id]; ok && j != i {
				if dups < 5 {
					t.Errorf("ID %d (machine %d, %s) issued by holder %d and holder %d", id, snowfence.V1().Split(id).Machine,
						msStr(snowfence.V1().TimeOf(id).UnixMilli()), j, i)
				}
				dups++
			}
			seen[id] = i
		}
	}
	if dups > 0 {
		t.Errorf("%d of %d IDs issued twice", dups, total)
	}
	t.Logf("%d IDs checked", total)
}

// waitServes waits until etcd answers cli again after a restart, so the
// keepers' next calls do not fail on a broken connection instead.
func waitServes(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx := ctxFor(t)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := cli.Get(cctx, "/waitServes")
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("etcd did not answer after the restore: %v", err)
		}
	}
}

// msStr formats Unix ms for test messages.
func msStr(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05.000") }
