package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/pgstore"
)

// traceBaseMs is wall-clock second 0 of the frozen-holder trace (Unix ms,
// 2026-09-26T12:00:00Z): its times are traceBaseMs + seconds × 1000.
const traceBaseMs int64 = 1790424000000

func at(sec int64) time.Time { return time.UnixMilli(traceBaseMs + sec*1000) }

// traceKeeper is a keeper with the trace's table timings (a 30 s lease, as
// in the trace; production uses 5 min) and its generator.
func traceKeeper(t *testing.T, s lease.Store, clk *fakeclock.Clock, holder string) (*lease.Keeper, *snowfence.Generator) {
	t.Helper()
	k, err := leasetest.StartKeeper(t.Context(), lease.KeeperConfig{
		Store: s, Holder: holder, Range: &lease.Range{Lo: 37, Hi: 37}, Clock: clk,
		LeaseFor: 30 * time.Second, RenewEvery: 10 * time.Second, SelfFence: 20 * time.Second, Margin: 5 * time.Second,
	})
	if err != nil {
		t.Fatalf("%s: StartKeeper: %v", holder, err)
	}
	var g *snowfence.Generator
	t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
	g, err = snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, clk)
	return k, g
}

// settle waits until the keeper's loop is asleep on its clock.
func settle(t *testing.T, clk *fakeclock.Clock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := clk.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatalf("keeper never went back to sleep: %v", err)
	}
}

func mintN(t *testing.T, who string, g *snowfence.Generator, n int) []snowfence.ID {
	t.Helper()
	ids, err := g.NextN(t.Context(), n)
	if err != nil {
		t.Fatalf("%s: NextN: %v", who, err)
	}
	return ids
}

// TestFrozenHolderTrace replays a holder frozen past its lease and its
// successor on number 37, with the Keeper and generator on fake clocks and
// the store real (a 30 s lease keeps the numbers short):
// A claims at −180 s (epoch 7) and issues from 100 s (its claim's notice
// window: the tables' 4 min 40 s), renews at 100 s to expiry 130 s, issues
// at 105 s and freezes; B claims at 131 s by its own clock (epoch 8); A
// wakes at 145 s, its renewal "epoch 7" fails with ErrLost and it refuses
// to issue; B issues from 411 s (its claim's notice window). Every ID of A is below its fence
// (130 − 5 = 125 s), every ID of B above 130 s.
func TestFrozenHolderTrace(t *testing.T) {
	t.Parallel()
	pool := testPool(t, 4)
	table := newTable(t, pool)
	sA, sB := openStore(t, pool, table), openStore(t, pool, table)
	// Number 37 was held six times before, the last lease long expired.
	if _, err := pool.Exec(t.Context(), "INSERT INTO "+pgx.Identifier{table}.Sanitize()+
		" (region, machine_id, holder, lease_expiry, lease_epoch) VALUES (0, 37, '', $1, 6)", at(-300).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	const holderA, holderB = "i-0a1b2c3d4e5f67890/pid-4121/1790424000000", "i-0fedcba9876543210/pid-907/1790424129000"

	clkA := fakeclock.New(at(-180))
	kA, gA := traceKeeper(t, sA, clkA, holderA)
	for range 28 { // renewals every 10 s from −170 s to 100 s
		clkA.Advance(10 * time.Second)
		settle(t, clkA)
	}
	rec := mustGetRec(t, sA, 37)
	if rec.Holder != holderA || rec.Token != 7 || rec.ExpiresMs != at(130).UnixMilli() {
		t.Fatalf("row at 100 s = %+v, want holder A, epoch 7, expiry 130 s", rec)
	}
	idsA := mintN(t, "A at 100 s", gA, 100)
	clkA.Advance(5 * time.Second) // 105 s: an ID, then the freeze
	idsA = append(idsA, mintN(t, "A at 105 s", gA, 100)...)
	leaseA := kA.Lease()

	clkB := fakeclock.New(at(131))
	kB, gB := traceKeeper(t, sB, clkB, holderB)
	if l := kB.Lease(); l.Machine != 37 || l.Token != 8 || l.StartMs < at(131).UnixMilli() {
		t.Fatalf("B's lease = %v starting %d, want 37 epoch 8 from 131 s", l, l.StartMs)
	}

	clkA.Advance(40 * time.Second) // 145 s: A wakes; its renewal is due
	settle(t, clkA)
	if st := kA.Status(); st.Losses == 0 {
		t.Errorf("A's keeper after waking: %+v, want the lease lost", st)
	}
	if _, err := sA.Extend(t.Context(), leaseA, at(175).UnixMilli(), 30*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Errorf(`renewal "epoch 7" to 175 s: %v, want ErrLost`, err)
	}
	if id, err := gA.Next(t.Context()); !errors.Is(err, snowfence.ErrFenced) {
		t.Errorf("A at 145 s: Next = %v, %v; want ErrFenced", id, err)
	}
	// B's first grant starts its claim's notice window (4 min 40 s) after
	// the claim: it renews on the way (every 10 s from 141 s) and issues at
	// 411 s.
	for range 28 {
		clkB.Advance(10 * time.Second)
		settle(t, clkB)
	}
	idsB := mintN(t, "B at 411 s", gB, 100)
	if first := idsB[0].Time(); first.Before(at(411)) {
		t.Errorf("B's first ID at %v, before 411 s (its claim + the notice window)", first)
	}

	fence := at(125)
	for _, id := range idsA {
		if !id.Time().Before(fence) {
			t.Fatalf("A issued %v at %v, want below its fence %v", id, id.Time(), fence)
		}
	}
	for _, id := range idsB {
		if !id.Time().After(at(130)) {
			t.Fatalf("B issued %v at %v, want above A's expiry %v", id, id.Time(), at(130))
		}
	}
	if rec := mustGetRec(t, sB, 37); rec.Holder != holderB || rec.Token != 8 {
		t.Errorf("row at the end = %+v, want holder B epoch 8", rec)
	}
	t.Logf("A issued %d IDs from %v to %v; B %d from %v", len(idsA), idsA[0].Time().Sub(at(0)), idsA[len(idsA)-1].Time().Sub(at(0)),
		len(idsB), idsB[0].Time().Sub(at(0)))
}

func mustGetRec(t *testing.T, s *pgstore.Store, n int) lease.Record {
	t.Helper()
	rec, err := s.Get(t.Context(), n)
	if err != nil {
		t.Fatalf("Get(%d): %v", n, err)
	}
	return rec
}
