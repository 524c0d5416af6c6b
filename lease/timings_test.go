package lease_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// windowStore is a store that answers only MaxRestoreWindow and
// MaxNoticeWindow, for the keeper's configuration checks. A zero notice is
// etcd's bound.
type windowStore struct {
	lease.Store
	max, notice time.Duration
}

func (s windowStore) MaxRestoreWindow() time.Duration { return s.max }

// Region: keyspace 0, a one-region fleet's (StartKeeper compares it with
// KeeperConfig.Region).
func (windowStore) Region() int { return 0 }

func (s windowStore) MaxNoticeWindow() time.Duration {
	if s.notice == 0 {
		return etcdstore.MaxNoticeWindow
	}
	return s.notice
}

func timingsOf(c lease.KeeperConfig) lease.Timings {
	return lease.Timings{LeaseFor: c.LeaseFor, RenewEvery: c.RenewEvery, SelfFence: c.SelfFence, Margin: c.Margin}
}

// TestTimingsApply: Apply fills the zero timings and keeps the set ones.
func TestTimingsApply(t *testing.T) {
	table := lease.Timings{LeaseFor: 5 * time.Minute, RenewEvery: 10 * time.Second, SelfFence: 30 * time.Second, Margin: 5 * time.Second}
	for _, tc := range []struct {
		name string
		set  lease.KeeperConfig
		want lease.Timings
	}{
		{"none set", lease.KeeperConfig{}, table},
		{"renewal set", lease.KeeperConfig{RenewEvery: 15 * time.Second},
			lease.Timings{LeaseFor: 5 * time.Minute, RenewEvery: 15 * time.Second, SelfFence: 30 * time.Second, Margin: 5 * time.Second}},
		{"all set", lease.KeeperConfig{LeaseFor: time.Minute, RenewEvery: time.Second, SelfFence: 20 * time.Second, Margin: time.Second},
			lease.Timings{LeaseFor: time.Minute, RenewEvery: time.Second, SelfFence: 20 * time.Second, Margin: time.Second}},
	} {
		c := tc.set
		table.Apply(&c)
		if got := timingsOf(c); got != tc.want {
			t.Errorf("%s: Apply gave %+v, want %+v", tc.name, got, tc.want)
		}
	}
	var c lease.KeeperConfig
	lease.Timings{}.Apply(&c)
	if got := timingsOf(c); got != (lease.Timings{}) {
		t.Errorf("zero Timings applied: %+v, want the fields left zero", got)
	}
}

// TestEtcdTimingsAreKeeperDefaults: an etcd store's timings are what a
// keeper that sets none runs with.
func TestEtcdTimingsAreKeeperDefaults(t *testing.T) {
	c, err := lease.Defaults(lease.KeeperConfig{Store: windowStore{max: etcdstore.MaxRestoreWindow}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := timingsOf(c), etcdstore.Timings(); got != want {
		t.Errorf("keeper defaults %+v, etcdstore.Timings() %+v", got, want)
	}
}

// TestStoreTimingsPassTheKeeper: each store's timings, applied to a keeper
// configuration that sets none, pass the keeper's checks against that
// store's restore and notice windows.
func TestStoreTimingsPassTheKeeper(t *testing.T) {
	for _, tc := range []struct {
		name              string
		timings           lease.Timings
		maxWindow, notice time.Duration
	}{
		{"etcdstore", etcdstore.Timings(), etcdstore.MaxRestoreWindow, etcdstore.MaxNoticeWindow},
		{"pgstore", pgstore.Timings(), pgstore.MaxRestoreWindow, pgstore.MaxNoticeWindow},
		{"dynamostore", dynamostore.Timings(), dynamostore.MaxRestoreWindow, dynamostore.MaxNoticeWindow},
	} {
		c := lease.KeeperConfig{Store: windowStore{max: tc.maxWindow, notice: tc.notice}}
		tc.timings.Apply(&c)
		got, err := lease.Defaults(c)
		if err != nil {
			t.Errorf("%s: %+v refused: %v", tc.name, tc.timings, err)
			continue
		}
		if timingsOf(got) != tc.timings {
			t.Errorf("%s: keeper runs with %+v, want the store's %+v", tc.name, timingsOf(got), tc.timings)
		}
		t.Logf("%s: restore window %s of at most %s, notice window %s of at most %s", tc.name, got.RestoreMargin, tc.maxWindow,
			lease.NoticeWindow(got.SelfFence), tc.notice)
	}
}
