package node_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// Close releases the number with the end of the last ID issued as its
// mark: the generator's LastIssued, which Close reads once the generator
// is closed and gives the keeper (the keeper never reads the generator).
// The next holder starts at that mark. Below it would let the next holder
// mint the same IDs; above it (the whole reservation) passes the number
// over until the clock catches up.
func TestCloseReleasesAtTheLastIssued(t *testing.T) {
	t.Parallel()
	s := connect(t, etcdtest.Start(t, 1).Endpoints())
	clk := fakeclock.New(time.Now().Truncate(time.Second))
	cfg := noStore(lease.Range{Lo: 5, Hi: 5})
	cfg.Store, cfg.Generator.Clock = s, clk
	n, err := startOnClock(t, cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	mintFor(t, n, clk, 10*time.Second)
	last := n.Generator.LastIssued()
	if err := n.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Get(t.Context(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Held() || rec.MarkMs != last {
		t.Fatalf("machine 5 after Close: %+v, want free with mark %s, the end of the last ID issued", rec, lease.FormatMs(last))
	}
}
