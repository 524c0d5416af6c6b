package lease_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// Adversarial review 4: attacks on the notice floor that held (kept as
// regression tests). Stub store with etcd's windows; A runs, the store is
// restored, B claims A's number at once.

// TestAttack4FrozenProcessAfterRestore: A's process is frozen (SIGSTOP, a
// GC pause: both its clocks run on) right after a renewal, for 9 s — past
// B's floor and short of its mark. On waking its generator compares its
// monotonic clock with the last renewal: 9 s > 5 s self-fence, refused.
func TestAttack4FrozenProcessAfterRestore(t *testing.T) {
	s, cs, sa, sb := attack4Stores(false)
	clkA := fakeclock.New(t0)
	a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7})
	untilRenewed(a, clkA, a.step)
	a.mint(10)
	cs.cut.Store(true) // its renewals, when it wakes, fail without an answer: the self-fence decides
	s.restore()
	clkB := fakeclock.New(clkA.Time())
	b, err := startHolder(t, sb, clkB, "b", lease.Range{Lo: 7, Hi: 7})
	if err != nil {
		t.Fatal(err)
	}
	for range 36 { // 9 s: A frozen (its loop does not run; its clocks do)
		tryMint(b, 100)
		b.step(250 * time.Millisecond)
	}
	clkA.Advance(9 * time.Second) // A wakes: no keeper turn before the first call
	_, err = a.g.NextN(context.Background(), 1000)
	var fe *snowfence.FencedError
	if !errors.As(err, &fe) || fe.Reason != "renewal-overdue" {
		t.Errorf("A on waking: %v, want fenced (renewal-overdue)", err)
	}
	tryMint(b, 1000)
	checkUnique(t, a.ids, b.ids)
}

// TestAttack4ClaimerClockSteppedBackAfterItsClaim: B's wall clock steps
// 10 s back right after its claim. Its floor is a timestamp: B waits until
// its stepped-back clock reaches it, 18 s later. A (cut off) stops at its
// self-fence.
func TestAttack4ClaimerClockSteppedBackAfterItsClaim(t *testing.T) {
	s, cs, sa, sb := attack4Stores(false)
	clkA := fakeclock.New(t0)
	a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7})
	untilRenewed(a, clkA, a.step)
	a.mint(10)
	cs.cut.Store(true)
	s.restore()
	clkB := fakeclock.New(clkA.Time())
	b, err := startHolder(t, sb, clkB, "b", lease.Range{Lo: 7, Hi: 7})
	if err != nil {
		t.Fatal(err)
	}
	claimed := clkB.Now().WallMs
	clkB.Step(-10 * time.Second)
	for range 100 {
		tryMint(a, 100)
		tryMint(b, 100)
		a.step(250 * time.Millisecond)
		b.step(250 * time.Millisecond)
	}
	if len(b.ids) == 0 {
		t.Fatal("B never issued")
	}
	t.Logf("B's first ID stamped claim + %d ms", firstAfter(b.ids, claimed))
	checkUnique(t, a.ids, b.ids)
}

// TestAttack4OppositeRatesAndOffset: A has the longest self-fence etcd
// allows (6.363 s), its clock 1 s ahead of B's and 8 % slow, B's 8 % fast
// (attack 3 ran A's rate alone). Held: the stamps A issues until its
// self-fence are its wall clock at the last renewal plus the self-fence in
// its own clock's units, whatever the rate, so only the offset (1 s) eats
// into the 8 s − 6.363 s.
func TestAttack4OppositeRatesAndOffset(t *testing.T) {
	for _, rates := range [][2]float64{{0.92, 1.08}, {1.08, 0.92}} {
		t.Run(fmt.Sprintf("A %.2f B %.2f", rates[0], rates[1]), func(t *testing.T) {
			sf := 6363 * time.Millisecond
			if w := lease.NoticeWindow(sf); w > etcdstore.MaxNoticeWindow {
				t.Fatal(w)
			}
			s, cs, sa, sb := attack4Stores(false)
			clkA := fakeclock.New(t0.Add(time.Second))
			clkA.SetRate(rates[0])
			a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7}, func(kc *lease.KeeperConfig) {
				kc.SelfFence, kc.LeaseFor = sf, 10*time.Second
			})
			untilRenewed(a, clkA, a.step)
			a.mint(10)
			cs.cut.Store(true)
			s.restore()
			clkB := fakeclock.New(clkA.Time().Add(-time.Second))
			clkB.SetRate(rates[1])
			b, err := startHolder(t, sb, clkB, "b", lease.Range{Lo: 7, Hi: 7})
			if err != nil {
				t.Fatal(err)
			}
			for range 600 {
				tryMint(a, 5)
				tryMint(b, 5)
				a.step(20 * time.Millisecond)
				b.step(20 * time.Millisecond)
			}
			if len(b.ids) == 0 {
				t.Fatal("B never issued")
			}
			checkUnique(t, a.ids, b.ids)
		})
	}
}
