package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
	"github.com/snowfence/snowfence/node"
)

// openerOf opens store, recording the region it was asked for.
func openerOf(store lease.Store, regions *[]int) node.Opener {
	return func(_ context.Context, region int, _ *slog.Logger) (*node.Opened, error) {
		*regions = append(*regions, region)
		return &node.Opened{Store: store}, nil
	}
}

// serve resolves --region from the registry in its own store, read at
// region 0 and closed again: a name or a number of a region in service
// starts; an unknown or retired one is refused with the command that fixes
// it; with no registry written, numbers work as before.
func TestServeResolvesRegion(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	fleet := registrytest.Of(
		registry.Region{Name: "us-east-1", Number: 0, CreatedMs: 1},
		registry.Region{Name: "old-region", Number: 1, CreatedMs: 2, RetiredMs: 3},
		registry.Region{Name: "eu-west-1", Number: 2, CreatedMs: 4},
	)
	for _, c := range []struct {
		name     string
		reg      registry.Registry
		text     string
		want     int
		wantErr  error
		wantText string
	}{
		{"by name", fleet, "eu-west-1", 2, nil, ""},
		{"by number", fleet, "2", 2, nil, ""},
		{"retired by name", fleet, "old-region", 0, registry.ErrRegionRetired, "snowfence regions list"},
		{"retired by number", fleet, "1", 0, registry.ErrRegionRetired, "was retired"},
		{"unknown name", fleet, "ap-south-9", 0, registry.ErrUnknownRegion, "snowfence regions add"},
		{"unknown number", fleet, "5", 0, registry.ErrUnknownRegion, "snowfence regions list"},
		{"no registry, a number", registry.Registry{}, "3", 3, nil, ""},
		{"no registry, a name", registry.Registry{}, "eu-west-1", 0, registry.ErrUnknownRegion, "snowfence regions add eu-west-1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := &leasetest.RegistryStore{Mem: &registrytest.Mem{Reg: c.reg}}
			var asked []int
			hr, err := resolveHolderRegion(context.Background(), openerOf(store, &asked), etcdstore.Config{}, c.text, quiet)
			hr.release()
			if len(asked) != 1 || asked[0] != 0 || store.Closes != 1 {
				t.Errorf("store opened for regions %v and closed %d times; want once at region 0, closed once", asked, store.Closes)
			}
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), c.wantText) {
					t.Fatalf("--region %s: %v; want %v saying %q", c.text, err, c.wantErr, c.wantText)
				}
				return
			}
			if err != nil {
				t.Fatalf("--region %s: %v", c.text, err)
			}
			if hr.region.Number != c.want || !hr.registry.Equal(c.reg) {
				t.Errorf("--region %s: %+v; want number %d and the registry read", c.text, hr, c.want)
			}
		})
	}
}
