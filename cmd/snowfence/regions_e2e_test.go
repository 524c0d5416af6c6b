package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/embedetcd"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
)

// registryOn connects to the etcd at url and returns its region registry
// copy, skipping the test while the etcd store keeps none.
func registryOn(t *testing.T, url string) lease.RegistryStore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: []string{url}}, etcdstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rs, ok := lease.Store(s).(lease.RegistryStore)
	if !ok {
		t.Skipf("the etcd store (%T) does not implement lease.RegistryStore yet", s)
	}
	return rs
}

// serve --region resolves the name or number in the registry of its own
// store: a retired or unknown region refuses to start, saying which
// command fixes it; a region in service starts, by name.
func TestE2EServeRegionRefusal(t *testing.T) {
	dir := t.TempDir()
	startService(t, dir, "--machines", "40-40")
	url, err := embedetcd.ReadClientURL(dir)
	if err != nil {
		t.Fatal(err)
	}
	rs := registryOn(t, url)
	ctx := context.Background()
	now := time.Now().UnixMilli()
	for _, name := range []string{"us-east-1", "eu-west-1"} {
		if _, err := lease.AddRegion(ctx, []lease.RegistryStore{rs}, name, now, 8); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lease.RetireRegion(ctx, []lease.RegistryStore{rs}, "eu-west-1", now); err != nil {
		t.Fatal(err)
	}
	serve := func(region string) []string {
		return []string{"serve", "--listen", "127.0.0.1:0", "--etcd-endpoints", url, "--machines", "41-41", "--region", region}
	}
	for _, c := range []struct{ region, want string }{
		{"eu-west-1", "snowfence regions list"},
		{"1", "was retired"},
		{"ap-south-9", "snowfence regions add"},
		{"5", "not in the region registry"},
	} {
		if _, errOut := cli(t, 1, serve(c.region)...); !strings.Contains(errOut, c.want) {
			t.Errorf("serve --region %s: stderr %s; want it to say %q", c.region, errOut, c.want)
		}
	}
	startService(t, t.TempDir(), "--etcd-endpoints", url, "--machines", "42-42", "--region", "us-east-1")
}
