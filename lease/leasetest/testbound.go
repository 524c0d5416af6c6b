package leasetest

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// CheckTestBound checks a lease table store's test bound
// (internal/testbound): def, the store without one, waits its constant
// maxNotice before a claim's first grant, at least the notice window of the
// table timings' self-fence; bounded, the store with bound b, waits
// lease.NoticeWindow(b), in its Keyspace views too, and refuses a keeper
// whose self-fence is longer than b, whose holders would still issue when
// another claim of their number starts.
func CheckTestBound(t testing.TB, def, bounded lease.Store, maxNotice, b time.Duration) {
	t.Helper()
	if got := def.MaxNoticeWindow(); got != maxNotice || got < lease.NoticeWindow(lease.TableTimings().SelfFence) {
		t.Errorf("default MaxNoticeWindow %v, want the constant %v, at least the table timings' notice window", got, maxNotice)
	}
	want := lease.NoticeWindow(b)
	if got := bounded.MaxNoticeWindow(); got != want {
		t.Errorf("MaxNoticeWindow %v with test bound %v, want %v", got, b, want)
	}
	ks, err := bounded.Keyspace(1)
	if err != nil {
		t.Fatal(err)
	}
	if got := ks.MaxNoticeWindow(); got != want {
		t.Errorf("Keyspace(1).MaxNoticeWindow %v, want %v", got, want)
	}
	_, err = lease.StartKeeper(t.Context(), lease.KeeperConfig{Store: bounded, LeaseFor: 10 * time.Second, RenewEvery: time.Second, SelfFence: b + time.Second})
	if !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("a keeper with a %v self-fence on a store with test bound %v: %v, want ErrInvalid", b+time.Second, b, err)
	}
}
