package snowfence_test

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Stats.Issued counts IDs handed out: a batch that fails part way
// discards the IDs it reserved, and they are not counted.
func TestIssuedCountsOnlyHandedOut(t *testing.T) {
	g, clk := newGen(t, nil)
	for range 4 {
		if _, err := g.NextN(context.Background(), 1000); err != nil {
			t.Fatal(err)
		}
	}
	// 96 IDs are left in this millisecond; the batch takes them, then
	// waits for the next one and is canceled there.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		ids, err := g.NextN(ctx, 1000)
		if len(ids) != 0 {
			err = errors.New("a failed batch returned IDs")
		}
		done <- err
	}()
	if err := clk.BlockUntilWaiters(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("batch: %v, want context.Canceled", err)
	}
	clk.Advance(time.Millisecond)
	next(t, g)
	if got := g.Stats().Issued; got != 4001 {
		t.Fatalf("Stats.Issued = %d, want 4001 (4 batches of 1000 and one ID; the canceled batch's 96 were discarded)", got)
	}
}
