package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
)

// node.Start fails with ErrNoFreeNumber rather than wait as a spare — also
// when the layout changes while it waits for its first grant, and the
// next layout's range is full. The keeper claims v1 at once; the cutover to
// v2 comes within the claim's notice window (8 s on etcd), so Start's wait
// for the grant reaches v2, every number of whose range is held. Start
// used to wait there (WaitIssuing's Claimed) for a number to free, for
// ever, blocked on the keeper rather than on the clock; it must return.
func TestStartFailsWhenTheNextLayoutIsFull(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s := connect(t, etcdtest.Start(t, 1).Endpoints())
	clk := fakeclock.New(time.Now().Truncate(time.Second))
	text := "v1,v2@" + clk.Time().Add(4*time.Second).UTC().Format(time.RFC3339)
	setRecord(t, s, text)
	sched, err := snowfence.ParseSchedule(text)
	if err != nil {
		t.Fatal(err)
	}
	// Someone else holds v2's only number, 7.
	ks, err := lease.KeyspaceOf(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := s.Keyspace(ks)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Claim(ctx, lease.ClaimRequest{Holder: "other", Range: lease.Range{Lo: 7, Hi: 7}, NowMs: clk.Now().WallMs,
		LeaseFor: time.Hour, Schedule: text}); err != nil {
		t.Fatal(err)
	}
	cfg := noStore(lease.Range{Lo: 5, Hi: 5})
	cfg.Store, cfg.Generator.Clock, cfg.Generator.Schedule = s, clk, sched
	cfg.Keeper.LayoutRanges = map[string]lease.Range{"v2": {Lo: 7, Hi: 7}}
	done := make(chan error, 1)
	go func() {
		n, err := node.Start(ctx, cfg)
		if n != nil {
			n.Close(context.Background())
		}
		done <- err
	}()
	// The keeper sleeps on the clock throughout; move time on while it
	// does, for up to two minutes (the notice window is 8 s).
	for range 480 {
		bctx, bcancel := context.WithCancel(ctx)
		blocked := make(chan error, 1)
		go func() { blocked <- clk.BlockUntilWaiters(bctx, 1) }()
		select {
		case err := <-done:
			bcancel()
			if !errors.Is(err, lease.ErrNoFreeNumber) {
				t.Fatalf("node.Start with v2's range full at the cutover: %v, want ErrNoFreeNumber", err)
			}
			return
		case err := <-blocked:
			bcancel()
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(250 * time.Millisecond)
		}
	}
	t.Fatalf("node.Start still waits two minutes past its start, v2's range full since the cutover at %s: it waits as a spare", text)
}
