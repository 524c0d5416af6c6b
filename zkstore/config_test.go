package zkstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/zkstore"
)

// TestConfigRefused: what New, Connect and Keyspace refuse, each with
// lease.ErrInvalid.
func TestConfigRefused(t *testing.T) {
	bad := map[string]zkstore.Config{
		"relative path":    {Path: "snowfence"},
		"root":             {Path: "/"},
		"trailing slash":   {Path: "/snowfence/"},
		"empty element":    {Path: "/a//b"},
		"dot element":      {Path: "/a/../b"},
		"under /zookeeper": {Path: "/zookeeper/x"},
		"negative region":  {Region: -1},
		"negative window":  {RestoreWindow: -time.Second},
		"negative timeout": {RequestTimeout: -time.Second},
		"negative bound":   {TestBound: testbound.Of(-time.Second)},
		"negative reserve": {TestBound: testbound.Of(time.Second).WithMaxReserve(-time.Second)},
		"reserve alone":    {TestBound: testbound.Bound{}.WithMaxReserve(10 * time.Second)},
	}
	for name, cfg := range bad {
		if _, err := zkstore.New(nil, cfg); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("New with no connection (%s): %v, want ErrInvalid", name, err)
		}
		if _, err := zkstore.Connect([]string{"127.0.0.1:1"}, time.Second, cfg); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("Connect with %s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := zkstore.Connect(nil, time.Second, zkstore.Config{}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Connect to no servers: %v, want ErrInvalid", err)
	}
}

// TestStoreBasics: a store reads its registry through itself, refuses a
// schedule other than the fleet's (the default, never set), refuses a
// negative keyspace, and a test bound shortens its notice window, in its
// keyspaces too.
func TestStoreBasics(t *testing.T) {
	e := zktest.Start(t, 1)
	s := open(t, e, newPath(t))
	if rr, ok := s.RegistryReader().(*zkstore.Store); !ok || rr != s {
		t.Errorf("RegistryReader = %v; want the store itself", s.RegistryReader())
	}
	if _, err := s.Keyspace(-1); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Keyspace(-1): %v, want ErrInvalid", err)
	}
	ks, err := s.Keyspace(3)
	if err != nil || ks.Region() != 3 {
		t.Fatalf("Keyspace(3): %v, region %v", err, ks)
	}
	r := req("a", 0, 0, time.Now().UnixMilli())
	r.Schedule = "v1,v2@2099-01-01T00:00:00Z"
	if _, err := s.Claim(t.Context(), r); !errors.Is(err, lease.ErrSchedule) {
		t.Errorf("a claim on a schedule other than v1: %v, want ErrSchedule (the fleet schedule was never set)", err)
	}
	bounded, err := zkstore.New(dial(t, e), zkstore.Config{Path: s.Path(), TestBound: testbound.Of(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	leasetest.CheckTestBound(t, s, bounded, zkstore.MaxNoticeWindow, 5*time.Second)
}

// TestRestoreWindowTestBound: a library user's Config (the zero TestBound),
// and a test bound without a reserve, keep the 6-minute restore window —
// the restore floor and raise-marks' shortest --to, which every holder of
// a real fleet is refused a longer window than; a test bound with a
// reserve shortens it to lease.RestoreWindow of the bound, in the store's
// keyspaces too, and a keeper whose window is longer than that is refused.
func TestRestoreWindowTestBound(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	for name, cfg := range map[string]zkstore.Config{
		"library user's":      {Path: path},
		"self-fence bound":    {Path: path, TestBound: testbound.Of(5 * time.Second)},
		"explicit longer one": {Path: path, RestoreWindow: time.Minute},
	} {
		s, err := zkstore.New(dial(t, e), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.MaxRestoreWindow(); got != 6*time.Minute {
			t.Errorf("%s Config: MaxRestoreWindow %v, want 6 min, the constant MaxRestoreWindow", name, got)
		}
		ks, err := s.Keyspace(1)
		if err != nil {
			t.Fatal(err)
		}
		if got := ks.MaxRestoreWindow(); got != zkstore.MaxRestoreWindow {
			t.Errorf("%s Config: Keyspace(1).MaxRestoreWindow %v, want %v", name, got, zkstore.MaxRestoreWindow)
		}
	}
	if w := lease.RestoreWindow(lease.TableTimings().LeaseFor, lease.TableTimings().SelfFence); zkstore.MaxRestoreWindow < w {
		t.Errorf("MaxRestoreWindow %v is shorter than the table timings' restore window %v", zkstore.MaxRestoreWindow, w)
	}

	const reserve, selfFence = 12 * time.Second, 6 * time.Second
	bounded, err := zkstore.New(dial(t, e), zkstore.Config{Path: path, TestBound: testbound.Of(selfFence).WithMaxReserve(reserve)})
	if err != nil {
		t.Fatal(err)
	}
	want := lease.RestoreWindow(reserve, selfFence) // 14.2 s
	if got := bounded.MaxRestoreWindow(); got != want {
		t.Errorf("MaxRestoreWindow %v with a test bound of reserve %v and self-fence %v, want %v", got, reserve, selfFence, want)
	}
	ks, err := bounded.Keyspace(2)
	if err != nil {
		t.Fatal(err)
	}
	if got := ks.MaxRestoreWindow(); got != want {
		t.Errorf("Keyspace(2).MaxRestoreWindow %v, want %v", got, want)
	}
	// A holder reserving past the bound could still issue when the floor
	// after a restore lets another claim start: refused.
	_, err = lease.StartKeeper(t.Context(), lease.KeeperConfig{Store: bounded, LeaseFor: reserve + time.Second, RenewEvery: time.Second, SelfFence: selfFence})
	if !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("a keeper reserving %v on a store with a test bound of reserve %v: %v, want ErrInvalid", reserve+time.Second, reserve, err)
	}
}
