package leasetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// checkKeeperRace: more Keepers than numbers start at once, each with its
// own Store value, on one fake clock. As many start as there are numbers,
// on distinct numbers, and the rest fail with ErrNoFreeNumber. Each mints
// (once its claim's notice window has passed);
// the winners close (releasing with their last timestamp) and the losers
// start on the freed numbers. No ID repeats, and on each number every ID of
// the second holder is above every ID of the first.
func checkKeeperRace(t *testing.T, s *suite) {
	const keepers, lo, hi = 6, 40, 42
	st := s.store(t)
	clk := fakeclock.New(time.UnixMilli(now()).Truncate(time.Second))
	rng := lease.Range{Lo: lo, Hi: hi}
	// A bound on each phase's waits (the starts; then the minting), not
	// one for the whole check: six keepers racing for three numbers on a
	// lease table shared with a loaded CI run once took longer than 30 s
	// to start. The bounds are patience, not figures the check measures.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	stores := make([]lease.Store, keepers)
	for i := range stores {
		stores[i] = s.reopen(t, st)
	}
	start := func(i int) (*lease.Keeper, error) {
		return StartKeeper(ctx, lease.KeeperConfig{
			Store: stores[i], Holder: fmt.Sprintf("keeper-%d", i), Range: &rng, Clock: clk,
			MaxWait: 2 * time.Second, // as MaxAhead: fail rather than take a far number
		})
	}
	ks := make([]*lease.Keeper, keepers)
	errs := make([]error, keepers)
	// Every keeper still starting, and every winner, is one loop; when all
	// sleep, the clock moves on (a starter retrying a failed claim).
	var starting, won atomic.Int32
	starting.Store(keepers)
	stop := driveClock(ctx, clk, func() int { return int(starting.Load() + won.Load()) }, 50*time.Millisecond)
	var wg sync.WaitGroup
	for i := range keepers {
		wg.Go(func() {
			ks[i], errs[i] = start(i)
			if errs[i] == nil {
				won.Add(1)
			}
			starting.Add(-1)
		})
	}
	wg.Wait()
	stop()
	var winners, losers []int
	for i, err := range errs {
		switch {
		case err == nil:
			winners = append(winners, i)
			t.Cleanup(func() { ks[i].Close(context.Background(), lease.UnknownIssued) })
		case errors.Is(err, lease.ErrNoFreeNumber):
			losers = append(losers, i)
		default:
			t.Fatalf("keeper %d: %v, want a lease or ErrNoFreeNumber", i, err)
		}
	}
	if len(winners) != hi-lo+1 {
		t.Fatalf("%d keepers started on %d numbers", len(winners), hi-lo+1)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	winning := make([]*lease.Keeper, 0, len(winners))
	for _, i := range winners {
		winning = append(winning, ks[i])
	}
	untilIssuing(t, ctx, clk, len(winning), winning...)
	seen := map[snowfence.ID]string{}
	lastOn := map[int]int64{} // machine → last timestamp of its first holder
	// mint makes keeper i's generator, mints on it and closes it: its
	// LastIssued is the mark the keeper is closed with.
	mint := func(i int, k *lease.Keeper) ([]snowfence.ID, int64) {
		t.Helper()
		g, err := snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
		if err != nil {
			t.Fatal(err)
		}
		ids, err := g.NextN(ctx, 500)
		if err != nil {
			t.Fatalf("keeper %d: NextN: %v (status %+v)", i, err, k.Status())
		}
		for _, id := range ids {
			if prev, ok := seen[id]; ok {
				t.Fatalf("ID %d issued by both %s and keeper %d", id, prev, i)
			}
			seen[id] = fmt.Sprintf("keeper %d", i)
		}
		g.Close()
		return ids, g.LastIssued()
	}
	issued := map[int]int64{} // keeper → its generator's LastIssued
	machines := map[int]int{}
	for _, i := range winners {
		l := ks[i].Lease()
		if l == nil {
			t.Fatalf("keeper %d started without a lease", i)
		}
		if prev, ok := machines[l.Machine]; ok {
			t.Fatalf("machine %d held by keepers %d and %d", l.Machine, prev, i)
		}
		machines[l.Machine] = i
		var ids []snowfence.ID
		ids, issued[i] = mint(i, ks[i])
		lastOn[l.Machine] = ids[len(ids)-1].Time().UnixMilli()
	}
	for _, i := range winners {
		if err := ks[i].Close(ctx, issued[i]); err != nil {
			t.Errorf("keeper %d: Close: %v", i, err)
		}
	}
	clk.Advance(time.Second)
	for _, i := range losers[:len(winners)] {
		k, err := start(i)
		if err != nil {
			t.Fatalf("keeper %d after the others closed: %v", i, err)
		}
		t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) })
		m := k.Lease().Machine
		untilIssuing(t, ctx, clk, 1, k)
		ids, last := mint(i, k)
		if first := ids[0].Time().UnixMilli(); first <= lastOn[m] {
			t.Errorf("machine %d: keeper %d's first ID at %d ms, want above the previous holder's last at %d ms", m, i, first, lastOn[m])
		}
		lastOn[m] = ids[len(ids)-1].Time().UnixMilli()
		if err := k.Close(ctx, last); err != nil {
			t.Errorf("keeper %d: Close: %v", i, err)
		}
	}
}
