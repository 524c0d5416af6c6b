package lease_test

import (
	"slices"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// TestNotable: after raise-marks over a range the listing shows the
// holders, the quarantined number and the number released lately, and
// sums up the free numbers that only carry the raised mark (one mark
// shared by all of them) or a mark older than RecentlyFree.
func TestNotable(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	raised := now + time.Minute.Milliseconds()
	var recs []lease.Record
	for n := range 1024 {
		recs = append(recs, lease.Record{Machine: n, MarkMs: raised})
	}
	recs[40] = lease.Record{Machine: 40, Holder: "vm/pid-1/1", Token: 3, MarkMs: raised + 5000}
	recs[41] = lease.Record{Machine: 41, Quarantined: true, MarkMs: raised}
	recs[42] = lease.Record{Machine: 42, Token: 2, MarkMs: now - 1000}                                  // released lately
	recs[43] = lease.Record{Machine: 43, Token: 1, MarkMs: now - lease.RecentlyFree.Milliseconds() - 1} // released long ago
	shown, q := lease.Notable(recs, now)
	var got []int
	for _, r := range shown {
		got = append(got, r.Machine)
	}
	if !slices.Equal(got, []int{40, 41, 42}) || q.N != 1021 || q.MaxMarkMs != raised {
		t.Fatalf("Notable = %v, %+v; want numbers 40 41 42 shown and 1021 summed up with marks up to %d", got, q, raised)
	}
}
