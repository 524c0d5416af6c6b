package service

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// A fake instant serve's region names read the time from.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

// Serve's region names answer from memory; a miss reads the registry again
// at most every 5 s; a failed read keeps the names; a retired region keeps
// its name.
func TestRegionNamesMiss(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := registrytest.Of(registry.Region{Name: "us-east-1", Number: 0, CreatedMs: 1}, registry.Region{Name: "eu-west-1", Number: 1, CreatedMs: 2, RetiredMs: 3})
	store := &registrytest.Mem{Reg: reg}
	clk := &fakeNow{t: time.Unix(1000, 0)}
	c := newRegionNames(store, reg, quiet, clk.now)

	check := func(n int, wantName string, wantOK bool, wantReads int) {
		t.Helper()
		if name, ok := c.Name(n); name != wantName || ok != wantOK {
			t.Errorf("Name(%d) = %q, %v; want %q, %v", n, name, ok, wantName, wantOK)
		}
		if got := store.ReadCount(); got != wantReads {
			t.Errorf("after Name(%d): %d reads of the store, want %d", n, got, wantReads)
		}
	}
	check(0, "us-east-1", true, 0)
	check(1, "eu-west-1", true, 0) // retired: its IDs still decode to it
	check(2, "", false, 0)         // read at start, less than 5 s ago
	clk.add(regionNamesOnMiss)
	check(2, "", false, 1)
	check(2, "", false, 1) // not again within 5 s
	store.Set(registrytest.Of(reg.Regions[0], reg.Regions[1], registry.Region{Name: "ap-south-1", Number: 2, CreatedMs: 4}))
	clk.add(regionNamesOnMiss - time.Millisecond)
	check(2, "", false, 1)
	clk.add(time.Millisecond)
	check(2, "ap-south-1", true, 2) // added since: found on the miss
	check(2, "ap-south-1", true, 2)

	store.SetFail(errors.New("store down"))
	clk.add(regionNamesOnMiss)
	check(5, "", false, 3)
	check(0, "us-east-1", true, 3) // the names read before stay
}

// Without a registry written, the names are the numbers in decimal, with
// no read of the store; the background read, tick by tick, finds a
// registry once it is written; close stops it.
func TestRegionNamesBackground(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := &registrytest.Mem{Reads: make(chan struct{})}
	clk := &fakeNow{t: time.Unix(1000, 0)}
	c := newRegionNames(store, registry.Registry{}, quiet, clk.now)
	tick := make(chan time.Time)
	go c.run(tick)
	defer c.close()

	if name, ok := c.Name(3); name != "3" || !ok {
		t.Errorf("no registry: Name(3) = %q, %v; want \"3\", true", name, ok)
	}
	store.Set(registrytest.Of(registry.Region{Name: "us-east-1", Number: 0, CreatedMs: 1}))
	tick <- clk.now()
	<-store.Reads     // the background read
	tick <- clk.now() // run has finished the read and stored it once it takes the next tick
	<-store.Reads
	if name, ok := c.Name(0); name != "us-east-1" || !ok {
		t.Errorf("after the background read: Name(0) = %q, %v; want us-east-1", name, ok)
	}
	if n := store.ReadCount(); n != 2 {
		t.Errorf("%d reads, want the 2 ticks'", n)
	}
}
