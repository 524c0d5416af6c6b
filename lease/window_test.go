package lease_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// The restore window follows the keeper's own timings: a holder cut off
// from the store goes on issuing up to max(Reserve, SelfFence) after its
// last acknowledged renewal, so a claim after a restore must start later
// than that (plus a skew budget). The keeper passes it with every claim,
// with its schedule; a window set shorter is refused.
func TestKeeperRestoreWindow(t *testing.T) {
	c := etcdtest.Start(t, 1)
	for _, tc := range []struct {
		name string
		kc   lease.KeeperConfig
		want time.Duration
	}{
		// Reserve = LeaseFor = 10 s: 10 s × 1.1 + 1 s.
		{"defaults", lease.KeeperConfig{}, 12 * time.Second},
		// The case: --lease-ttl 30s --self-fence 20s with a
		// 10 s reservation; the self-fence is the longer. (etcd now
		// refuses a 20 s self-fence, whose notice window is above its
		// MaxNoticeWindow; the table stores accept it. The store here
		// admits it: admitNotice.)
		{"self-fence longer than the reserve", lease.KeeperConfig{LeaseFor: 30 * time.Second, SelfFence: 20 * time.Second, Reserve: 10 * time.Second}, 23 * time.Second},
		{"explicit, longer (within the store's 40 s)", lease.KeeperConfig{RestoreMargin: 30 * time.Second}, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &wrapStore{Store: newStore(t, c.Endpoints())}
			kc := tc.kc
			kc.Store, kc.Holder, kc.Range, kc.Clock = admitNotice{Store: w, notice: lease.NoticeWindow(20 * time.Second)}, "a", &lease.Range{Lo: 1, Hi: 1}, fakeclock.New(t0)
			k, err := leasetest.StartKeeper(testCtx(t), kc)
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close(testCtx(t), lease.UnknownIssued) // no generator
			reqs := w.requests()
			if len(reqs) == 0 {
				t.Fatal("no claim")
			}
			if got := reqs[0].RestoreWindow; got != tc.want {
				t.Errorf("ClaimRequest.RestoreWindow = %s, want %s", got, tc.want)
			}
			if got := reqs[0].Schedule; got != "v1" {
				t.Errorf("ClaimRequest.Schedule = %q, want v1", got)
			}
		})
	}
	if got := lease.RestoreWindow(30*time.Second, 20*time.Second); got != 34*time.Second {
		t.Errorf("RestoreWindow(30 s, 20 s) = %s, want 34 s", got)
	}
	s := newStore(t, c.Endpoints())
	for _, kc := range []lease.KeeperConfig{
		{RestoreMargin: 11 * time.Second}, // the old default, Reserve + 1 s
		{LeaseFor: 30 * time.Second, SelfFence: 20 * time.Second, Reserve: 10 * time.Second, RestoreMargin: 22 * time.Second},
	} {
		kc.Store, kc.Holder, kc.Clock = admitNotice{Store: s, notice: lease.NoticeWindow(20 * time.Second)}, "b", fakeclock.New(t0)
		if _, err := leasetest.StartKeeper(testCtx(t), kc); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("RestoreMargin %s with Reserve %s, SelfFence %s: %v, want ErrInvalid", kc.RestoreMargin, kc.Reserve, kc.SelfFence, err)
		}
	}
}
