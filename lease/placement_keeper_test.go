package lease_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// A schedule whose layouts cannot hold the holder's range or region left
// the keeper holding a number its generator could never use (machine 700
// under v2, region 8 anywhere). StartKeeper refuses such a configuration
// before claiming anything, so every number it claims fits every layout in
// force while it is held.
func TestKeeperRefusesPlacementTheScheduleCannotHold(t *testing.T) {
	c := etcdtest.Start(t, 1)
	mig, _ := snowfence.ParseSchedule("v1,v2@" + cutover)
	v2 := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V2()})
	for _, tc := range []struct {
		name   string
		sched  snowfence.Schedule
		rng    *lease.Range
		next   map[string]lease.Range
		region int
		want   string
	}{
		// The default range is each layout's whole range (0-1023 under
		// v1, 0-511 under v2: the keeper holds a number per layout), and
		// a given Range applies to every layout not in LayoutRanges.
		{"v1,v2 with the default range and v2 range 0-600", mig, nil, map[string]lease.Range{"v2": {Lo: 0, Hi: 600}}, 0, "machines 0-511 only"},
		{"v1,v2 with 600-700", mig, &lease.Range{Lo: 600, Hi: 700}, nil, 0, "machines 0-511 only"},
		{"v1,v2 with 600-700 for v2", mig, &lease.Range{Lo: 0, Hi: 10}, map[string]lease.Range{"v2": {Lo: 600, Hi: 700}}, 0, "machines 0-511 only"},
		{"v1 over 0-1024", mig, &lease.Range{Lo: 0, Hi: 1024}, map[string]lease.Range{"v2": {Lo: 0, Hi: 511}}, 0, "machines 0-1023 only"},
		{"v2 with region 8", v2, &lease.Range{Lo: 0, Hi: 511}, nil, 8, "regions 0-7"},
		{"v1 with 0-1024", snowfence.DefaultSchedule(), &lease.Range{Lo: 0, Hi: 1024}, nil, 0, "machines 0-1023 only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := regionStore(t, c.Endpoints(), tc.region)
			w := &wrapStore{Store: s}
			_, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{
				Store: w, Holder: "a", Range: tc.rng, LayoutRanges: tc.next, Region: tc.region, Clock: fakeclock.New(t0), Schedule: tc.sched})
			if !errors.Is(err, lease.ErrInvalid) || !errors.Is(err, snowfence.ErrPlacement) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("StartKeeper: %v, want ErrInvalid and ErrPlacement saying %q", err, tc.want)
			}
			if n := len(w.requests()); n != 0 {
				t.Errorf("%d claims before the refusal, want none", n)
			}
		})
	}
}

// The keeper's region must be the store's: the grants carry the region the
// store leases in.
func TestKeeperRegionMustMatchStore(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := regionStore(t, c.Endpoints(), 2)
	v2 := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V2()})
	_, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{
		Store: s, Holder: "a", Range: &lease.Range{Lo: 0, Hi: 511}, Region: 1, Clock: fakeclock.New(t0), Schedule: v2})
	if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "store's region 2") {
		t.Fatalf("keeper region 1 on a store of region 2: %v, want ErrInvalid", err)
	}
}
