package etcdstore_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// TestAttack5EtcdStepBeforeFirstID: attack4's forward step after a restore
// (TestAttack4EtcdForwardStepAfterRestore, held since the clock-jumped
// fence) with one difference: A has issued no ID yet — a quiet service
// whose keeper holds its number and renews, but whose generator has taken
// no reading. The forward jump is measured between two of the generator's
// own readings, so a step before its first is never seen: A issues on its
// wall clock, 7 s ahead, until its next renewal (≤ 2 s) fails against the
// restored store; B issues from its claim + 8 s. Entry point
// lease.StartKeeper + snowfence.New; real etcd restored from a snapshot.
func TestAttack5EtcdStepBeforeFirstID(t *testing.T) {
	const stepBy = 7 * time.Second
	c := etcdtest.Start(t, 1)
	prefix := prefixFor(t)
	t0 := time.Now().Truncate(time.Second)
	snap := c.Snapshot(t)

	clkA := fakeclock.New(t0)
	a := startKeeperHolder(t, c.Client(t), prefix, clkA, "A", lease.Range{Lo: 9, Hi: 9})
	a.issuing()
	attack4UntilRenewed(a)

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
