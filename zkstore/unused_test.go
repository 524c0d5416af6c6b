package zkstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// TestScheduleSetAtOnceAfterAClaimSinceTheRead: a holder claims its first
// number on an unused path between SetFleetScheduleUnused's read (no
// record, no marker) and its multi-op. The change at once must fail with
// lease.ErrInUse — its multi-op creates the used marker the claim made —
// and the schedule stay unset: set, the holder would issue under the old
// schedule beside holders that claim under the new one at once.
func TestScheduleSetAtOnceAfterAClaimSinceTheRead(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	holder := open(t, e, path)
	nowMs := time.Now().UnixMilli()
	var l *lease.Lease
	admin, err := zkstore.NewHooked(dial(t, e), zkstore.Config{Path: path}, func() {
		var err error
		if l, err = holder.Claim(t.Context(), req("v1 holder", 0, 0, nowMs)); err != nil {
			t.Errorf("the claim between the change's read and its write: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	fs, err := admin.SetFleetScheduleUnused(t.Context(), 0, "v2")
	if !errors.Is(err, lease.ErrInUse) {
		t.Fatalf("SetFleetScheduleUnused with a holder that claimed after its read (%+v): %+v, %v; want ErrInUse — "+
			"the holder issues under v1 beside v2 holders", l, fs, err)
	}
	if fs, err := holder.FleetSchedule(t.Context()); err != nil || fs.Version != 0 {
		t.Errorf("after the refusal the schedule is %+v, %v; want it never set", fs, err)
	}
}
