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

// The notice floor holds against a cut-off holder A whose clocks misbehave
// (frozen, skewed, drifting) and a claimer B whose clock is stepped back:
// ways an adversarial review tried that held, kept as regression tests.
// Stub store with etcd's windows; A runs, the store is restored, B claims
// A's number at once.

// TestNoticeFloorFrozenProcessAfterRestore: a process frozen across a
// restore is refused on waking (its self-fence), never minting the claimer's
// IDs. A's process is frozen (SIGSTOP, a GC pause: both its clocks run on)
// right after a renewal, for 9 s — past B's floor and short of its mark. On
// waking its generator compares its monotonic clock with the last renewal: 9
// s > 5 s self-fence, refused.
func TestNoticeFloorFrozenProcessAfterRestore(t *testing.T) {
	s, cs, sa, sb := restoreStores(false)
	clkA := fakeclock.New(t0)
	a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7})
	untilRenewed(a, clkA, a.step)
	a.mint(10)
	cs.cut.Store(true) // its renewals, when it wakes, fail without an answer: the self-fence decides
	b, _, _ := restoreAndClaimB(t, s, sb, clkA.Time(), false)
	for range 36 { // 9 s: A frozen (its loop does not run; its clocks do)
		tryMint(b, 100)
		b.step(250 * time.Millisecond)
	}
	clkA.Advance(9 * time.Second) // A wakes: no keeper turn before the first call
	_, err := a.g.NextN(context.Background(), 1000)
	var fe *snowfence.FencedError
	if !errors.As(err, &fe) || fe.Reason != "renewal-overdue" {
		t.Errorf("A on waking: %v, want fenced (renewal-overdue)", err)
	}
	tryMint(b, 1000)
	checkUnique(t, a.ids, b.ids)
}

// TestNoticeFloorClaimerClockSteppedBack: a claimer whose clock steps back
// after its claim waits for its floor on the stepped clock and mints none of
// the cut-off holder's IDs. B's wall clock steps 10 s back right after its
// claim. Its floor is a timestamp: B waits until its stepped-back clock
// reaches it, 18 s later. A (cut off) stops at its self-fence.
func TestNoticeFloorClaimerClockSteppedBack(t *testing.T) {
	s, cs, sa, sb := restoreStores(false)
	clkA := fakeclock.New(t0)
	a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7})
	untilRenewed(a, clkA, a.step)
	a.mint(10)
	cs.cut.Store(true)
	b, clkB, claimed := restoreAndClaimB(t, s, sb, clkA.Time(), false)
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

// TestNoticeFloorOppositeRatesAndOffset: the floor outlasts a cut-off holder
// on etcd's longest self-fence when the two clocks drift opposite ways and
// disagree by 1 s. A has the longest self-fence etcd allows (6.363 s), its
// clock 1 s ahead of B's and 8 % slow, B's 8 % fast
// (TestNoticeFloorSkewAndRate runs A's rate alone). Held: the stamps A
// issues until its self-fence are its wall clock at the last renewal plus
// the self-fence in its own clock's units, whatever the rate, so only the
// offset (1 s) eats into the 8 s − 6.363 s.
func TestNoticeFloorOppositeRatesAndOffset(t *testing.T) {
	for _, rates := range [][2]float64{{0.92, 1.08}, {1.08, 0.92}} {
		t.Run(fmt.Sprintf("A %.2f B %.2f", rates[0], rates[1]), func(t *testing.T) {
			sf := 6363 * time.Millisecond
			if w := lease.NoticeWindow(sf); w > etcdstore.MaxNoticeWindow {
				t.Fatal(w)
			}
			s, cs, sa, sb := restoreStores(false)
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

// TestNoticeFloorSkewAndRate: the floor outlasts a cut-off holder on etcd's
// longest self-fence whose clock is 1 s ahead and drifts 8 %. The cut-off
// holder A has the longest self-fence etcd allows (6.363 s), its clock 1 s
// ahead of the claimer B's and running 8 % slow or fast (fakeclock: wall and
// timers alike); the store forgets A's claim (restore) and B claims at once.
// B's first grant must start above every ID A stamps until its self-fence.
// 20 ms steps.
func TestNoticeFloorSkewAndRate(t *testing.T) {
	for _, rate := range []float64{0.92, 1.08} {
		for _, ahead := range []time.Duration{time.Second, 0} {
			t.Run(fmt.Sprintf("rate %.2f ahead %s", rate, ahead), func(t *testing.T) {
				sf := 6363 * time.Millisecond
				if w := lease.NoticeWindow(sf); w > etcdstore.MaxNoticeWindow {
					t.Fatalf("self-fence %s too long (%s)", sf, w)
				}
				clkA := fakeclock.New(t0.Add(ahead))
				clkA.SetRate(rate)
				s := &stubStore{machine: 7}
				cs := &cutStub{stubStore: s}
				a := mustHolder(t, cs, clkA, "a", lease.Range{Lo: 7, Hi: 7}, func(kc *lease.KeeperConfig) {
					kc.SelfFence, kc.LeaseFor = sf, 10*time.Second
				})
				a.mint(10)
				cs.cut.Store(true)
				b, _, _ := restoreAndClaimB(t, s, s, clkA.Time().Add(-ahead), false)
				var aLast int64
				for range 600 {
					if ids, err := a.g.NextN(context.Background(), 5); err == nil {
						a.ids = append(a.ids, ids...)
						aLast = snowfence.V1().TimeOf(ids[0]).UnixMilli()
					}
					if ids, err := b.g.NextN(context.Background(), 5); err == nil {
						b.ids = append(b.ids, ids...)
					}
					a.step(20 * time.Millisecond)
					b.step(20 * time.Millisecond)
				}
				if len(b.ids) == 0 {
					t.Fatal("b never issued")
				}
				t.Logf("a's last stamp %s, b's first %s", lease.FormatMs(aLast), lease.FormatMs(snowfence.V1().TimeOf(b.ids[0]).UnixMilli()))
				checkUnique(t, a.ids, b.ids)
			})
		}
	}
}
