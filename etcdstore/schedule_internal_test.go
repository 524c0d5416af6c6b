package etcdstore

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// TestClaimComparesScheduleAtomically: the fleet schedule set between a
// claim's read (which found it absent: v1) and its transaction makes the
// transaction fail, and the claim returns ErrSchedule leaving neither the
// owner key nor its etcd lease behind.
func TestClaimComparesScheduleAtomically(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	s, err := New(cli, Config{})
	if err != nil {
		t.Fatal(err)
	}
	read := guardOf(nil) // what the claim's read saw: no schedule key
	if _, err := s.SetFleetSchedule(testCtx(t), 0, "v1,v2@2036-01-01T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	r := lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: time.Now().UnixMilli(),
		LeaseFor: 10 * time.Second, MaxAhead: time.Second, Schedule: lease.DefaultFleetSchedule}
	l, _, err := s.tryClaim(testCtx(t), r, 0, &read, &scheduleGuard{})
	if l != nil || !errors.Is(err, lease.ErrSchedule) {
		t.Fatalf("tryClaim after the schedule moved = %v, %v; want ErrSchedule", l, err)
	}
	if resp, err := cli.Get(testCtx(t), s.keys.owner(0)); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("owner key after the refused claim: %v, %v; want none", resp.Kvs, err)
	}
	if resp, err := cli.Leases(testCtx(t)); err != nil || len(resp.Leases) != 0 {
		t.Errorf("etcd leases after the refused claim: %v, %v; want none", resp.Leases, err)
	}
}
