package registry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// Eight operators adding a region each at once, on three copies, get eight
// different numbers; a ninth finds none left; every copy agrees.
func TestAddRegionConcurrently(t *testing.T) {
	ctx := context.Background()
	cs := registrytest.MemCopies(3)
	var wg sync.WaitGroup
	got := make([]registry.Region, 8)
	errs := make([]error, 8)
	for i := range 8 {
		wg.Go(func() { got[i], errs[i] = registry.AddRegion(ctx, cs, fmt.Sprintf("r-%d", i), int64(1000+i), 8) })
	}
	wg.Wait()
	var nums []int
	for i, err := range errs {
		if err != nil {
			t.Fatalf("adder %d: %v", i, err)
		}
		nums = append(nums, got[i].Number)
	}
	slices.Sort(nums)
	if !slices.Equal(nums, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("numbers %v, want 0..7 once each", nums)
	}
	if _, err := registry.AddRegion(ctx, cs, "r-9", 2000, 8); !errors.Is(err, registry.ErrNoRegionNumber) {
		t.Fatalf("ninth region: %v, want ErrNoRegionNumber", err)
	}
	first, _ := cs[0].Store.Registry(ctx)
	for i, c := range cs {
		if r, _ := c.Store.Registry(ctx); !r.Equal(first) || r.Version != 8 {
			t.Fatalf("copy %d: %+v, want version 8 equal to copy 1", i+1, r)
		}
	}
}

// A retired region keeps its number: the next region takes a new one, and
// a holder cannot start in the retired one.
func TestRetiredNumberNeverReused(t *testing.T) {
	ctx := context.Background()
	cs := registrytest.MemCopies(2)
	for _, name := range []string{"eu-west-1", "us-east-1"} {
		if _, err := registry.AddRegion(ctx, cs, name, 1, 8); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := registry.RetireRegion(ctx, cs, "eu-west-1", 2); err != nil {
		t.Fatal(err)
	}
	g, err := registry.AddRegion(ctx, cs, "ap-south-1", 3, 8)
	if err != nil || g.Number != 2 {
		t.Fatalf("region after a retirement: %+v, %v; want number 2 (0 stays eu-west-1's)", g, err)
	}
	if _, err := registry.AddRegion(ctx, cs, "eu-west-1", 4, 8); !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("a retired name again: %v, want ErrInvalid", err)
	}
	r, _ := cs[1].Store.Registry(ctx)
	for _, tc := range []struct {
		text string
		want error
		num  int
	}{
		{"eu-west-1", registry.ErrRegionRetired, 0},
		{"0", registry.ErrRegionRetired, 0},
		{"us-east-1", nil, 1},
		{"2", nil, 2},
		{"mars-1", registry.ErrUnknownRegion, 0},
		{"5", registry.ErrUnknownRegion, 0},
		{"-1", lease.ErrInvalid, 0},
	} {
		g, err := r.Resolve(tc.text)
		if !errors.Is(err, tc.want) || (err == nil && g.Number != tc.num) {
			t.Errorf("Resolve(%q) = %+v, %v; want number %d, error %v", tc.text, g, err, tc.num, tc.want)
		}
	}
	if left := r.Left(8); left != 5 {
		t.Errorf("Left(8) = %d, want 5", left)
	}
}

// With no registry written, a number is taken as it is and a name is
// unknown.
func TestResolveWithoutRegistry(t *testing.T) {
	var r registry.Registry
	if g, err := r.Resolve("3"); err != nil || g.Number != 3 {
		t.Fatalf("Resolve(3) without a registry: %+v, %v", g, err)
	}
	if _, err := r.Resolve("eu-west-1"); !errors.Is(err, registry.ErrUnknownRegion) {
		t.Fatalf("Resolve(name) without a registry: %v, want ErrUnknownRegion", err)
	}
}

// Copies that differ are refused; a change stopped after the first copy is
// finished by Sync.
func TestRegistryDivergedAndSync(t *testing.T) {
	ctx := context.Background()
	cs := registrytest.MemCopies(3)
	if _, err := registry.AddRegion(ctx, cs, "eu-west-1", 1, 8); err != nil {
		t.Fatal(err)
	}
	r, _ := cs[0].Store.Registry(ctx)
	next, _, _ := r.WithRegion("us-east-1", 2, 8)
	if err := cs[0].Store.SetRegistry(ctx, next); err != nil { // the change stops here
		t.Fatal(err)
	}
	if _, err := registry.AddRegion(ctx, cs, "ap-south-1", 3, 8); !errors.Is(err, registry.ErrDiverged) {
		t.Fatalf("add on diverged copies: %v, want ErrDiverged", err)
	}
	if _, err := registry.Sync(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if g, err := registry.AddRegion(ctx, cs, "ap-south-1", 3, 8); err != nil || g.Number != 2 {
		t.Fatalf("add after sync: %+v, %v; want number 2", g, err)
	}
}

func TestCheckRegionName(t *testing.T) {
	for name, ok := range map[string]bool{"eu-west-1": true, "a": true, "": false, "1eu": false, "EU": false, "eu-": false, "eu_w": false, "é": false} {
		if err := registry.CheckRegionName(name); (err == nil) != ok {
			t.Errorf("CheckRegionName(%q) = %v, want ok %v", name, err, ok)
		}
	}
}

// Two operators adding at once, each naming the copies in another order,
// still get two numbers: every change writes the copies in name order.
func TestAddRegionCopiesInAnyOrder(t *testing.T) {
	ctx := context.Background()
	for range 20 {
		cs := registrytest.MemCopies(3)
		rev := []registry.Copy{cs[2], cs[1], cs[0]}
		var wg sync.WaitGroup
		var ga, gb registry.Region
		var ea, eb error
		wg.Go(func() { ga, ea = registry.AddRegion(ctx, cs, "a", 1, 8) })
		wg.Go(func() { gb, eb = registry.AddRegion(ctx, rev, "b", 1, 8) })
		wg.Wait()
		if ea != nil || eb != nil || ga.Number == gb.Number {
			t.Fatalf("adds in two orders: a %+v %v, b %+v %v; want two numbers", ga, ea, gb, eb)
		}
	}
}

// Once written, the registry names its copies: a change that names fewer,
// or another, is refused before it writes anything.
func TestRegistryRefusesOtherCopies(t *testing.T) {
	ctx := context.Background()
	cs := registrytest.MemCopies(3)
	if _, err := registry.AddRegion(ctx, cs, "a", 1, 8); err != nil {
		t.Fatal(err)
	}
	other := registry.Copy{Name: "copy-9", Store: cs[2].Store}
	for name, given := range map[string][]registry.Copy{
		"a subset":       cs[:2],
		"another name":   {cs[0], cs[1], other},
		"one copy twice": {cs[0], cs[1], cs[1]},
		"no copy":        nil,
	} {
		if _, err := registry.AddRegion(ctx, given, "b", 2, 8); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	for i, c := range cs {
		if r, _ := c.Store.Registry(ctx); r.Version != 1 {
			t.Errorf("copy %d at version %d after the refused changes, want 1", i+1, r.Version)
		}
	}
}

// Sync brings a copy forward only over the one change it missed, never
// over a registry that differs otherwise.
func TestSyncOnlyOverOneChange(t *testing.T) {
	ctx := context.Background()
	cs := registrytest.MemCopies(2)
	if _, err := registry.AddRegion(ctx, cs, "a", 1, 8); err != nil {
		t.Fatal(err)
	}
	r, _ := cs[1].Store.Registry(ctx)
	// Copy 2 gets a change copy 1 never saw, at the same version copy 1
	// is about to reach by another change.
	theirs, _, _ := r.WithRegion("b", 2, 8)
	if err := cs[1].Store.SetRegistry(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	ours, _, _ := r.WithRegion("c", 3, 8)
	ours2, _, _ := ours.WithRegion("d", 4, 8)
	cs[0].Store.SetRegistry(ctx, ours)
	cs[0].Store.SetRegistry(ctx, ours2)
	if _, err := registry.Sync(ctx, cs); !errors.Is(err, registry.ErrDiverged) {
		t.Fatalf("sync over a copy that went another way: %v, want ErrDiverged", err)
	}
	if got, _ := cs[1].Store.Registry(ctx); !got.Equal(theirs) {
		t.Fatalf("copy 2 after the refused sync: %+v, want it untouched", got)
	}
}
