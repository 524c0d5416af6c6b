package lease_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// TestAttack3NoticeFloorSkewAndRate: the cut-off holder A has the longest
// self-fence etcd allows (6.363 s), its clock 1 s ahead of the claimer B's
// and running 8 % slow or fast (fakeclock: wall and timers alike); the
// store forgets A's claim (restore) and B claims at once. B's first grant
// must start above every ID A stamps until its self-fence. 20 ms steps.
func TestAttack3NoticeFloorSkewAndRate(t *testing.T) {
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
				s.restore()
				clkB := fakeclock.New(clkA.Time().Add(-ahead))
				b, err := startHolder(t, s, clkB, "b", lease.Range{Lo: 7, Hi: 7})
				if err != nil {
					t.Fatal(err)
				}
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
