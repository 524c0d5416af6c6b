package lease_test

import (
	"context"
	"errors"
	"strings"
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

// A region's number must not be in use on a copy other than its home.
// Holders that ran before the registry existed ran as region 0 on their
// store; a registry whose first region (number 0) is homed on another
// store let that region's holders mint beside them, which nothing fences
// across two stores. The add reads every other copy's leases of the number
// and refuses with ErrInUse; homed where they ran, it is accepted.
func TestRegionNumberInUseOnAnotherCopyIsRefused(t *testing.T) {
	ctx := context.Background()
	cs, ss := fleetCopies(2)
	ss[0].recs = map[int][]lease.Record{0: {{Machine: 7, Holder: "pre-registry holder", ExpiresMs: 1 << 50}}}
	_, err := lease.AddRegionNumber(ctx, cs, "east", "copy-2", registry.AnyNumber, true, 1, 8)
	if !errors.Is(err, lease.ErrInUse) || !strings.Contains(err.Error(), "copy copy-1 holds 1 lease record of region number 0") {
		t.Fatalf("first region homed on copy-2 while copy-1 holds region 0's leases = %v; want ErrInUse naming copy-1", err)
	}
	if r, _ := ss[1].Registry(ctx); r.Version != 0 {
		t.Fatalf("the refused add wrote the registry: %+v", r)
	}
	if g, err := lease.AddRegionNumber(ctx, cs, "east", "copy-1", registry.AnyNumber, true, 1, 8); err != nil || g.Number != 0 {
		t.Fatalf("first region homed where region 0's holders ran = %+v, %v; want number 0", g, err)
	}
	// A later number in use elsewhere too: region 1's leases on copy-2.
	ss[1].recs = map[int][]lease.Record{1: {{Machine: 3, MarkMs: 1}}}
	if _, err := lease.AddRegionNumber(ctx, cs, "west", "copy-1", registry.AnyNumber, false, 2, 8); !errors.Is(err, lease.ErrInUse) {
		t.Fatalf("region 1 homed on copy-1 while copy-2 holds its leases = %v; want ErrInUse", err)
	}
	if g, err := lease.AddRegionNumber(ctx, cs, "west", "copy-2", registry.AnyNumber, false, 2, 8); err != nil || g.Number != 1 {
		t.Fatalf("region 1 homed on copy-2 = %+v, %v; want number 1", g, err)
	}
}
