package zkstore

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

// counting is a client that counts the requests of each kind it passes on.
type counting struct {
	client
	mu sync.Mutex
	n  map[string]int
}

func (c *counting) add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[op]++
}

// take returns the counts since the last take, and starts again.
func (c *counting) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

func (c *counting) Get(p string) ([]byte, *zk.Stat, error) { c.add("Get"); return c.client.Get(p) }
func (c *counting) Set(p string, d []byte, v int32) (*zk.Stat, error) {
	c.add("Set")
	return c.client.Set(p, d, v)
}
func (c *counting) Create(p string, d []byte, f int32, a []zk.ACL) (string, error) {
	c.add("Create")
	return c.client.Create(p, d, f, a)
}
func (c *counting) Children(p string) ([]string, *zk.Stat, error) {
	c.add("Children")
	return c.client.Children(p)
}
func (c *counting) Sync(p string) (string, error) { c.add("Sync"); return c.client.Sync(p) }
func (c *counting) Multi(ops ...any) ([]zk.MultiResponse, error) {
	c.add("Multi")
	return c.client.Multi(ops...)
}

// TestRequestsPerOperation holds docs/lease-stores.md's cost table
// ("Cost per holder") to the code: the requests a renewal, a release and
// a claim of a one-number range send, on a path already in use, and that
// each writes in exactly one Multi.
func TestRequestsPerOperation(t *testing.T) {
	e := zktest.Start(t, 1)
	raw := attackDial(t, e)
	c := &counting{client: raw, n: map[string]int{}}
	s, err := newStore(c, Config{Path: fmt.Sprintf("/cost%d/t-%d", time.Now().UnixNano()%1e9, attackSeq.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	now := time.Now().UnixMilli()
	cr := func(holder string, nowMs int64) lease.ClaimRequest {
		return lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 3, Hi: 3}, NowMs: nowMs, LeaseFor: 10 * time.Second, MaxAhead: time.Hour}
	}
	l, err := s.Claim(ctx, cr("a", now)) // the first: makes the parents and the path's znodes
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l, now+1); err != nil {
		t.Fatal(err)
	}
	c.take()
	check := func(what string, want map[string]int) {
		t.Helper()
		if got := c.take(); !maps.Equal(got, want) {
			t.Errorf("%s sent %v, want %v (docs/lease-stores.md, \"Cost per holder\")", what, got, want)
		} else {
			t.Logf("%s: %v", what, slices.Sorted(maps.Keys(got)))
		}
	}
	if l, err = s.Claim(ctx, cr("b", l.MarkMs+1)); err != nil {
		t.Fatal(err)
	}
	// Sync; Gets of the schedule, the registry, the used marker, the
	// number's znode and the origin; Children of the region and of the
	// number's journal; one Multi.
	check("a claim of a one-number range", map[string]int{"Sync": 1, "Get": 5, "Children": 2, "Multi": 1})
	if l, err = s.Extend(ctx, l, l.MarkMs+10_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	check("a renewal", map[string]int{"Sync": 1, "Get": 2, "Multi": 1})
	if err := s.Release(ctx, l, l.MarkMs); err != nil {
		t.Fatal(err)
	}
	check("a release", map[string]int{"Sync": 1, "Get": 2, "Children": 1, "Multi": 1})
}
