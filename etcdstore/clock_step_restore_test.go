package etcdstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// A running holder's clocks after a restore it cannot see, on a real etcd
// restored from a snapshot (same cluster token, revision bumped) while
// holder A runs; B is a process started at once after the restore and
// claims A's number, free in the restored store. lease's
// clock_step_restore_test.go and jump_fence_test.go have the same stories
// (found by an adversarial review) on a stub with both stores' windows;
// here they are played through etcdstore and an etcd restore. Every test
// counts IDs issued twice.

// untilRenewed steps h until its keeper's last renewal was sent at
// the clock's present reading (its mark a whole LeaseFor ahead, its next
// renewal RenewEvery away).
func untilRenewed(h *keeperHolder) {
	h.t.Helper()
	for range 100 {
		h.step(250 * time.Millisecond)
		if h.k.Status().LastRenewal.Equal(h.clk.Time().Truncate(time.Millisecond)) {
			return
		}
	}
	h.t.Fatalf("no renewal: %+v", h.k.Status())
}

// TestEtcdSuspendedHolderResumesAfterRestore: a holder whose host was
// suspended across an etcd restore mints none of the claimer's IDs on
// waking. A's host sleeps (its monotonic clock stops; wall and boot clocks
// count the sleep) just after a renewal, for 9 s; meanwhile etcd is restored
// and B claims A's number and issues from its claim + 8 s. A wakes with a
// correct wall clock, 1 s short of its mark; its generator's self-fence
// (monotonic) sees a fresh renewal. Only the keeper's CLOCK_BOOTTIME
// watchdog, a 200 ms real-time ticker, stops it: A mints one batch at once
// on waking, as a busy server would. Entry point: lease.StartKeeper +
// snowfence.New with the keeper's clock and a Boottime (what the default
// system clock gets).
func TestEtcdSuspendedHolderResumesAfterRestore(t *testing.T) {
	const sleep = 9 * time.Second
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	t0 := time.Now().Truncate(time.Second)
	snap := c.Snapshot(t)

	clkA := fakeclock.New(t0)
	var slept atomic.Int64
	a := startKeeper(t, c.Client(t), prefix, clkA, lease.KeeperConfig{Holder: "A", Range: &lease.Range{Lo: 9, Hi: 9},
		Boottime: func() time.Duration { return clkA.Now().Mono + time.Duration(slept.Load()) }})
	a.issuing()
	untilRenewed(a)
	a.mint(100)
	ga, _ := a.k.Grant()

	// A sleeps. etcd is restored; B starts at once.
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	clkB := fakeclock.New(clkA.Time())
	b := startKeeperHolder(t, c.Client(t), prefix, clkB, "B", lease.Range{Lo: 9, Hi: 9})
	claimed := clkB.Now().WallMs
	if l := b.k.Lease(); l == nil || l.Machine != 9 {
		t.Fatalf("B holds %+v, want 9", l)
	}
	for clkB.Now().WallMs < claimed+sleep.Milliseconds() {
		b.tryMint(10)
		b.step(250 * time.Millisecond)
	}
	// A wakes.
	slept.Add(int64(sleep))
	clkA.Step(sleep)
	if clkA.Now().WallMs >= ga.LimitMs {
		t.Fatalf("A woke past its limit %s: the test shows nothing", msStr(ga.LimitMs))
	}
	before := len(a.ids)
	a.tryMint(1000)
	b.tryMint(1000)
	var fe *snowfence.FencedError
	fenced := pollUntil(t, 5*time.Second, func() bool {
		_, err := a.g.Next(context.Background())
		return errors.As(err, &fe)
	})
	t.Logf("A woke at B's claim + %s and minted %d; then fenced by the watchdog: %v (%v)", sleep, len(a.ids)-before, fenced, fe)
	checkNoDuplicates(t, a, b)
}

// TestEtcdForwardStepAfterRestore: a holder whose wall clock steps forward
// right after an etcd restore it cannot see mints none of the claimer's IDs
// (the clock-jumped fence). A stays connected and is not suspended; right
// after the restore (and B's claim) its wall clock steps 7 s forward. It
// issues on its jumped clock (a forward jump is only logged) until its next
// renewal, 2 s later, fails against the restored store; its stamps reach B's
// claim + 9 s, B issues from claim + 8 s. Outside the documented "wall
// clocks agree to within about 1 s after a restore", but the generator saw
// the step.
func TestEtcdForwardStepAfterRestore(t *testing.T) {
	const stepBy = 7 * time.Second
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	t0 := time.Now().Truncate(time.Second)
	snap := c.Snapshot(t)

	clkA := fakeclock.New(t0)
	a := startKeeperHolder(t, c.Client(t), prefix, clkA, "A", lease.Range{Lo: 9, Hi: 9})
	a.issuing()
	untilRenewed(a)
	a.mint(100)

	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitServes(t, a.cli)
	clkB := fakeclock.New(clkA.Time())
	b := startKeeperHolder(t, c.Client(t), prefix, clkB, "B", lease.Range{Lo: 9, Hi: 9})
	claimed := clkB.Now().WallMs
	clkA.Step(stepBy)
	for range 80 { // 20 s
		a.tryMint(100)
		b.tryMint(100)
		a.step(250 * time.Millisecond)
		b.step(250 * time.Millisecond)
	}
	first := int64(-1)
	if len(b.ids) > 0 {
		first = snowfence.V1().TimeOf(b.ids[0]).UnixMilli() - claimed
	}
	t.Logf("A: forward jumps seen %d, status %+v; B's first ID at claim + %d ms", a.g.Stats().ForwardJumps, a.k.Status(), first)
	checkNoDuplicates(t, a, b)
}

// pollUntil calls cond every 10 ms of real time until it is true or d has
// passed (the watchdog is a real-time ticker).
func pollUntil(t *testing.T, d time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// TestEtcdJumpFenceStepBeforeFirstID: a forward step before a generator's
// first ID is fenced like any other, on etcd. TestEtcdForwardStepAfterRestore
// with one difference: A has issued no ID yet — a quiet service whose keeper
// holds its number and renews, but whose generator has taken no reading.
// The forward jump was once measured between two of the generator's own
// readings, so a step before its first was never seen: A issues on its
// wall clock, 7 s ahead, until its next renewal (≤ 2 s) fails against the
// restored store; B issues from its claim + 8 s. Entry point
// lease.StartKeeper + snowfence.New; real etcd restored from a snapshot.
func TestEtcdJumpFenceStepBeforeFirstID(t *testing.T) {
	const stepBy = 7 * time.Second
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	t0 := time.Now().Truncate(time.Second)
	snap := c.Snapshot(t)

	clkA := fakeclock.New(t0)
	a := startKeeperHolder(t, c.Client(t), prefix, clkA, "A", lease.Range{Lo: 9, Hi: 9})
	a.issuing()
	untilRenewed(a)

	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitServes(t, a.cli)
	clkB := fakeclock.New(clkA.Time())
	b := startKeeperHolder(t, c.Client(t), prefix, clkB, "B", lease.Range{Lo: 9, Hi: 9})
	claimed := clkB.Now().WallMs
	clkA.Step(stepBy)
	for range 80 { // 20 s
		a.tryMint(100)
		b.tryMint(100)
		a.step(250 * time.Millisecond)
		b.step(250 * time.Millisecond)
	}
	first := int64(-1)
	if len(b.ids) > 0 {
		first = snowfence.V1().TimeOf(b.ids[0]).UnixMilli() - claimed
	}
	t.Logf("A minted %d: forward jumps seen %d, status %+v; B minted %d, first ID at claim + %d ms",
		len(a.ids), a.g.Stats().ForwardJumps, a.k.Status(), len(b.ids), first)
	checkNoDuplicates(t, a, b)
}
