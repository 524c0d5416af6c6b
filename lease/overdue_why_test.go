package lease_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// TestOverdueFenceSaysWhy: the boot-clock watchdog's fence tells a store
// outage from a host suspend. Cut off from its store (renewals failing,
// the host awake: the boot and monotonic clocks agree), the holder's
// refusal says renewals are failing and names the last error — not "the
// host may have been suspended", which sent the operator to the host
// during a store outage. Control: a suspend (the boot clock runs ahead of
// the monotonic one) is still called one. The watchdog polls on real time:
// the test polls the keeper until it has fenced.
func TestOverdueFenceSaysWhy(t *testing.T) {
	for _, c := range []struct {
		name, want, not string
		suspend         bool
	}{
		{"store unreachable", "renewals are failing", "suspended", false},
		{"host suspended", "while the host was suspended", "renewals are failing", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &stubStore{machine: 7}
			cs := &cutStub{stubStore: s}
			clk := fakeclock.New(t0)
			var slept atomic.Int64
			a := mustHolder(t, cs, clk, "a", lease.Range{Lo: 7, Hi: 7}, kindTimings(false), func(kc *lease.KeeperConfig) {
				kc.Boottime = func() time.Duration { return clk.Now().Mono + time.Duration(slept.Load()) }
			})
			untilRenewed(a, clk, a.step)
			if c.suspend {
				slept.Add(int64(6 * time.Second)) // wall and boot clocks move on, the monotonic one does not
				clk.Step(6 * time.Second)
			} else {
				cs.cut.Store(true)
				for range 24 { // 6 s: past etcd's 5 s self-fence, renewals failing all along
					a.step(250 * time.Millisecond)
				}
			}
			var err error
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if _, err = a.k.GrantAt(clk.Now().WallMs); err != nil {
					break
				}
			}
			if err == nil || !isFenced(err) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), c.not) {
				t.Fatalf("the watchdog's fence: %v; want ErrFenced saying %q, not %q", err, c.want, c.not)
			}
			if !c.suspend && !strings.Contains(err.Error(), errCut.Error()) {
				t.Errorf("the fence of a holder cut off from its store: %v; want it to name the renewals' last error %q", err, errCut)
			}
			t.Logf("operator sees: %v", err)
		})
	}
}
