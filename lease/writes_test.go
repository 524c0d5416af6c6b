package lease_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// In steady state a holder writes to etcd once per renewal (the mark, a
// transaction compared on its token) besides its lease keep-alive: at the
// default 2 s period, 0.5 writes per second per holder. The etcd revision
// counts writes, so it measures this exactly.
func TestKeeperSteadyStateWrites(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	cli := c.Client(t)
	clk := fakeclock.New(t0)
	h := mustHolder(t, s, clk, "a", lease.Range{Lo: 0, Hi: 7})
	rev := func() int64 {
		resp, err := cli.Get(testCtx(t), "/")
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	before := rev()
	const renewals = 20
	for range renewals {
		h.step(2 * time.Second)
		h.mint(100)
	}
	writes := rev() - before
	t.Logf("%d renewals (%s of clock at the default 2 s period): %d etcd writes = %.2f writes/s per holder",
		renewals, time.Duration(renewals)*2*time.Second, writes, float64(writes)/(renewals*2))
	if writes != renewals {
		t.Fatalf("%d writes for %d renewals, want exactly one per renewal", writes, renewals)
	}
}
