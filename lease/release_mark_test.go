package lease_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// Close is told the end of the last ID issued by its owner (lastIssued).
// An owner that read it too early — before its generator stopped, while
// other calls still minted — gives a mark below IDs issued. The next holder
// of the number starts at the released mark, and when its clock is behind
// this holder's by more than the store's notice window (a number moved to
// another host), it mints those IDs again. The generator asked the keeper
// for the grant of every instant it issued at (GrantAt): the mark the
// keeper releases with is never below the end of the last of them.
func TestKeeperReleaseCoversGrantsHandedOut(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	// A's host clock runs a minute ahead of B's.
	clkA := fakeclock.New(t0.Add(time.Minute))
	clkB := fakeclock.New(t0)
	a := mustHolder(t, s, clkA, "host-a/1", lease.Range{Lo: 7, Hi: 7})
	a.mint(10)
	// The owner reads LastIssued while its generator still serves: what
	// is issued after the read is not in it.
	stale := a.g.LastIssued()
	a.step(time.Second)
	a.mint(1000)
	a.step(time.Second)
	late := a.mint(1000)
	a.g.Close()
	if err := a.k.Close(testCtx(t), stale); err != nil {
		t.Fatal(err)
	}
	issued := make(map[snowfence.ID]bool, len(a.ids))
	for _, id := range a.ids {
		issued[id] = true
	}

	// B takes machine 7 over and runs its clock up to the millisecond of
	// A's last IDs, minting as it goes.
	b := mustHolder(t, s, clkB, "host-b/1", lease.Range{Lo: 7, Hi: 7})
	target := late[0].Time().UnixMilli()
	dups := 0
	for clkB.Now().WallMs <= target {
		if g, err := b.k.Grant(); err == nil && clkB.Now().WallMs >= g.StartMs {
			ids, err := b.g.NextN(testCtx(t), 1000)
			if err != nil {
				t.Fatalf("B: NextN: %v (keeper %+v)", err, b.k.Status())
			}
			for _, id := range ids {
				if issued[id] {
					dups++
				}
			}
		}
		if left := time.Duration(target-clkB.Now().WallMs) * time.Millisecond; left > 0 {
			b.step(min(left, 500*time.Millisecond))
		} else {
			b.step(time.Millisecond)
		}
	}
	if dups > 0 {
		t.Fatalf("B minted %d IDs A had issued: A released machine 7 at %s, below its last ID at %s",
			dups, lease.FormatMs(stale), lease.FormatMs(a.g.LastIssued()))
	}
}
