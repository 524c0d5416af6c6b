package etcdstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// TestClaimComparesRegistryAtomically: a region registry recording another
// fleet schedule than the store's record, written after the claim read
// the registry key (absent) and checked it, still stops the claim: its
// transaction compares the key with what was read, and the claim, reading
// it again, is refused with lease.ErrSchedule — leaving neither an owner
// key nor its etcd lease behind.
func TestClaimComparesRegistryAtomically(t *testing.T) {
	t.Parallel()
	const record, recorded = "v1,v2@2036-01-01T00:00:00Z", "v1,v2@2037-01-01T00:00:00Z"
	cli := etcdtest.Start(t, 1).Client(t)
	s, err := New(cli, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetFleetSchedule(testCtx(t), 0, record); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(testCtx(t), s.keys.schedule)
	if err != nil {
		t.Fatal(err)
	}
	sched, reg := guardOf(resp.Kvs[0]), guardOf(nil) // what the claim's read saw: the record, no registry
	written := registry.Registry{Version: 1, Regions: []registry.Region{{Name: "a", Number: 0, CreatedMs: 1}}, Schedule: recorded}
	if err := s.SetRegistry(testCtx(t), written); err != nil {
		t.Fatal(err)
	}
	r := lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 0, Hi: 0}, NowMs: time.Now().UnixMilli(),
		LeaseFor: 10 * time.Second, MaxAhead: time.Second, Schedule: record}
	l, _, err := s.tryClaim(testCtx(t), r, 0, &sched, &reg)
	if l != nil || !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), "snowfence schedule set '"+recorded+"'") {
		t.Fatalf("tryClaim after a registry recording %s was written: %v, %v; want ErrSchedule naming snowfence schedule set '%s'", recorded, l, err, recorded)
	}
	if resp, err := cli.Get(testCtx(t), s.keys.owner(0)); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("owner key after the refused claim: %v, %v; want none", resp.Kvs, err)
	}
	if resp, err := cli.Leases(testCtx(t)); err != nil || len(resp.Leases) != 0 {
		t.Errorf("etcd leases after the refused claim: %v, %v; want none", resp.Leases, err)
	}
	// A registry rewritten meanwhile that still agrees with the record:
	// the claim reads it again and commits.
	agrees, err := written.WithSchedule(record)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetRegistry(testCtx(t), agrees); err != nil {
		t.Fatal(err)
	}
	if l, _, err := s.tryClaim(testCtx(t), r, 0, &sched, &reg); err != nil || l == nil {
		t.Fatalf("tryClaim after the registry came to record the store's schedule: %v, %v; want the lease", l, err)
	}
}
