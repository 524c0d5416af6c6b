package lease_test

import (
	"context"
	"errors"
	"testing"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// A generator's last tick and sequence are the only record of what it
// issued on its number: two generators fed by one keeper both start at
// sequence 0 in the same millisecond and mint the same IDs. So a keeper
// feeds exactly one generator, and a second snowfence.New on it is
// refused — also after the first generator was closed, whose last tick
// the second would not know.
func TestKeeperFeedsOneGenerator(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	clk := fakeclock.New(t0)
	k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{Store: s, Holder: "one", Range: &lease.Range{Lo: 423, Hi: 423}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var g1 *snowfence.Generator
	t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g1)) })
	g1, err = snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	// The claim's first grant waits out the store's notice window.
	(&holder{t: t, k: k, g: g1, clk: clk}).issuing()
	id1, err := g1.Next(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	g2, err := snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
	if err == nil {
		id2, nerr := g2.Next(testCtx(t))
		t.Fatalf("a second generator on one keeper was accepted (its first ID %d, the first generator's %d, error %v)", id2, id1, nerr)
	}
	if !errors.Is(err, snowfence.ErrLeaseBound) || !errors.Is(err, snowfence.ErrInvalidConfig) {
		t.Fatalf("second New = %v, want ErrLeaseBound and ErrInvalidConfig", err)
	}
	g1.Close()
	if _, err := snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff}); !errors.Is(err, snowfence.ErrLeaseBound) {
		t.Fatalf("New after the first generator closed = %v, want ErrLeaseBound", err)
	}
}

// A New that fails for another reason binds nothing: the keeper can still
// feed the generator configured right.
func TestKeeperBindsOnlyOnSuccess(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	clk := fakeclock.New(t0)
	k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{Store: s, Holder: "one", Range: &lease.Range{Lo: 7, Hi: 7}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var g *snowfence.Generator
	t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
	if _, err := snowfence.New(snowfence.Config{Lease: k, ClockPolicy: "sometimes"}); err == nil {
		t.Fatal("New accepted an unknown clock policy")
	}
	if g, err = snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff}); err != nil {
		t.Fatalf("New after a refused New: %v", err)
	}
}
