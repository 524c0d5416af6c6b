package lease_test

import (
	"context"
	"errors"
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// The registry's first region takes number 0. Holders that ran before the
// registry existed ran as region 0, unchecked; a first region given 1
// (--number) left 0 to the next add, and that region's holders minted the
// IDs of the running ones (an attack on regions add --number: one ID
// minted by both, on real etcd).
func TestFirstRegionTakesNumberZero(t *testing.T) {
	ctx := context.Background()
	cs, ss := fleetCopies(1)
	_, err := lease.AddRegionNumber(ctx, cs, "east", "copy-1", 1, true, 1, 8)
	if !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("first region given number 1 = %v; want ErrInvalid", err)
	}
	if r, _ := ss[0].Registry(ctx); r.Version != 0 {
		t.Fatalf("the refused add wrote the registry: %+v", r)
	}
	g, err := lease.AddRegionNumber(ctx, cs, "east", "copy-1", 0, true, 1, 8)
	if err != nil || g.Number != 0 {
		t.Fatalf("first region given number 0 = %+v, %v; want number 0", g, err)
	}
	if g, err := lease.AddRegionNumber(ctx, cs, "west", "copy-1", 2, false, 2, 8); err != nil || g.Number != 2 {
		t.Fatalf("a later region given number 2 = %+v, %v; want number 2", g, err)
	}
	if g, err := lease.AddRegionNumber(ctx, cs, "north", "copy-1", registry.AnyNumber, false, 3, 8); err != nil || g.Number != 1 {
		t.Fatalf("a later region without a number = %+v, %v; want 1", g, err)
	}
}
