package dynamostore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// traceBaseMs is wall-clock second 0 of the frozen-holder trace (Unix ms,
// 2026-09-26T12:00:00Z): its times are traceBaseMs + seconds × 1000.
const traceBaseMs int64 = 1790424000000

func wall(sec int64) time.Time { return time.UnixMilli(traceBaseMs + sec*1000) }

// traceHolder is a keeper and its generator on a fake clock of their own.
type traceHolder struct {
	k   *lease.Keeper
	g   *snowfence.Generator
	clk *fakeclock.Clock
	ids []snowfence.ID
}

// startTraceHolder starts a keeper and its generator on clk with the
// trace's timings: a 30 s lease renewed every 10 s, a 5 s margin between
// the mark and the generator's limit.
func startTraceHolder(t *testing.T, s lease.Store, clk *fakeclock.Clock, name string) *traceHolder {
	t.Helper()
	k, err := leasetest.StartKeeper(ctxFor(t), lease.KeeperConfig{
		Store: s, Holder: name, Range: &lease.Range{Lo: 37, Hi: 37}, Clock: clk,
		LeaseFor: 30 * time.Second, RenewEvery: 10 * time.Second, SelfFence: 20 * time.Second, Margin: 5 * time.Second,
	})
	if err != nil {
		t.Fatalf("StartKeeper(%s): %v", name, err)
	}
	var g *snowfence.Generator
	t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
	g, err = snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	h := &traceHolder{k: k, g: g, clk: clk}
	h.settle(t)
	return h
}

// settle waits until the keeper's loop is asleep on its clock.
func (h *traceHolder) settle(t *testing.T) {
	t.Helper()
	if err := h.clk.BlockUntilWaiters(ctxFor(t), 1); err != nil {
		t.Fatalf("keeper never went back to sleep: %v", err)
	}
}

// advance lets d pass on the holder's clock and waits for its keeper.
func (h *traceHolder) advance(t *testing.T, d time.Duration) {
	t.Helper()
	h.settle(t)
	h.clk.Advance(d)
	h.settle(t)
}

func (h *traceHolder) mint(t *testing.T, n int) {
	t.Helper()
	ids, err := h.g.NextN(context.Background(), n)
	if err != nil {
		t.Fatalf("NextN: %v (keeper %+v)", err, h.k.Status())
	}
	h.ids = append(h.ids, ids...)
}

// TestFrozenHolderTrace replays a holder frozen past its lease and its
// successor on dynalite, with a 30 s lease: worker A claims at −180 s
// (epoch 7) and issues from 100 s (its claim's notice window: the tables'
// 4 min 40 s), renews at 100 s to an expiry of 130 s, issues at 105 s and
// freezes; worker B claims at 131 s by its own clock (epoch 8); A wakes at
// 145 s, refuses, and its renewal for epoch 7 fails; B issues from 411 s. A's IDs
// all sit below 125 s (the mark minus the 5 s margin), B's above 130 s.
func TestFrozenHolderTrace(t *testing.T) {
	s := newStore(t)
	const (
		nameA = "i-0a1b2c3d4e5f67890/pid-4121/1790424000000"
		nameB = "i-0fedcba9876543210/pid-907/1790424129000"
	)
	// Number 37 was last held at epoch 6, long expired.
	if _, err := s.Client().PutItem(ctxFor(t), &dynamodb.PutItemInput{
		TableName: aws.String(s.Table()),
		Item: map[string]types.AttributeValue{
			"machine_id":   &types.AttributeValueMemberN{Value: "37"},
			"holder":       &types.AttributeValueMemberS{Value: "i-0123456789abcdef0/pid-1/1790420000000"},
			"lease_expiry": &types.AttributeValueMemberN{Value: strconv.FormatInt(wall(-300).UnixMilli(), 10)},
			"lease_epoch":  &types.AttributeValueMemberN{Value: "6"},
		},
	}); err != nil {
		t.Fatal(err)
	}

	// A claims at −180 s (epoch 7) and renews every 10 s from −170 s to
	// 100 s: expiry 130 s.
	a := startTraceHolder(t, s, fakeclock.New(wall(-180)), nameA)
	for range 28 {
		a.advance(t, 10*time.Second)
	}
	rec := leasetest.MustGet(t, s, 37)
	if rec.Holder != nameA || rec.Token != 7 || rec.MarkMs != wall(130).UnixMilli() {
		t.Fatalf("row after A's renewal at 100 s = %+v, want holder A, epoch 7, expiry 130 s", rec)
	}
	leaseA := a.k.Lease()
	a.mint(t, 100)
	a.clk.Advance(5 * time.Second) // 105 s: one more batch, then A freezes
	a.mint(t, 100)

	// B, by its own clock at 131 s, claims the expired number: epoch 8.
	b := startTraceHolder(t, s, fakeclock.New(wall(131)), nameB)
	rec = leasetest.MustGet(t, s, 37)
	if rec.Holder != nameB || rec.Token != 8 || rec.MarkMs != wall(161).UnixMilli() {
		t.Fatalf("row after B's claim = %+v, want holder B, epoch 8, expiry 161 s", rec)
	}
	if l := b.k.Lease(); l.StartMs != wall(131).UnixMilli() {
		t.Fatalf("B's lease %+v, want StartMs 131 s", l)
	}

	// A wakes at 145 s: the next request is refused, and its renewal
	// (sent by its keeper as the clock jumps) fails.
	a.settle(t)
	a.clk.Advance(40 * time.Second)
	if _, err := a.g.Next(context.Background()); !errors.Is(err, snowfence.ErrFenced) {
		t.Fatalf("A's request at 145 s: %v, want ErrFenced", err)
	}
	a.settle(t)
	if st := a.k.Status(); st.Losses != 1 {
		t.Fatalf("A's keeper after waking: %+v, want one loss", st)
	}
	// A's renewal as it would send it on waking: epoch 7, expiry 175 s.
	if _, err := s.Extend(ctxFor(t), leaseA, wall(175).UnixMilli(), 30*time.Second); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("A's renewal for epoch 7 at 145 s: %v, want ErrLost", err)
	}
	if _, err := a.g.Next(context.Background()); !errors.Is(err, snowfence.ErrFenced) {
		t.Fatalf("A after its loss: %v, want ErrFenced", err)
	}
	// B's first grant starts its claim's notice window (4 min 40 s) after
	// the claim: it renews on the way (every 10 s from 141 s) and issues
	// from 411 s.
	for range 28 {
		b.advance(t, 10*time.Second)
	}
	b.mint(t, 100)
	if first := snowfence.V1().TimeOf(b.ids[0]); first.Before(wall(411)) {
		t.Fatalf("B's first ID at %s, before 411 s (its claim + the notice window)", first)
	}
	b.advance(t, 10*time.Second) // 421 s: B renewed at 421 s, mints on
	b.mint(t, 100)

	layout := snowfence.V1()
	for _, id := range a.ids {
		if ts := layout.TimeOf(id); !ts.Before(wall(125)) {
			t.Fatalf("A issued %d at %s, not below 125 s", id, ts)
		}
	}
	for _, id := range b.ids {
		if ts := layout.TimeOf(id); !ts.After(wall(130)) {
			t.Fatalf("B issued %d at %s, not above 130 s", id, ts)
		}
	}
	sec := func(id snowfence.ID) float64 { return float64(layout.TimeOf(id).UnixMilli()-traceBaseMs) / 1000 }
	t.Logf("A: %d IDs at %.3f–%.3f s; B: %d IDs at %.3f–%.3f s", len(a.ids), sec(a.ids[0]), sec(a.ids[len(a.ids)-1]),
		len(b.ids), sec(b.ids[0]), sec(b.ids[len(b.ids)-1]))
}
