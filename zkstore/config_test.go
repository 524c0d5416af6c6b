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
