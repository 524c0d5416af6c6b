package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
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
	fleet := registryOf(
		lease.Region{Name: "us-east-1", Number: 0, CreatedMs: 1},
		lease.Region{Name: "old-region", Number: 1, CreatedMs: 2, RetiredMs: 3},
		lease.Region{Name: "eu-west-1", Number: 2, CreatedMs: 4},
	)
	for _, c := range []struct {
		name     string
		reg      lease.Registry
		text     string
		want     int
		wantErr  error
		wantText string
	}{
		{"by name", fleet, "eu-west-1", 2, nil, ""},
		{"by number", fleet, "2", 2, nil, ""},
		{"retired by name", fleet, "old-region", 0, lease.ErrRegionRetired, "snowfence regions list"},
		{"retired by number", fleet, "1", 0, lease.ErrRegionRetired, "was retired"},
		{"unknown name", fleet, "ap-south-9", 0, lease.ErrUnknownRegion, "snowfence regions add"},
		{"unknown number", fleet, "5", 0, lease.ErrUnknownRegion, "snowfence regions list"},
		{"no registry, a number", lease.Registry{}, "3", 3, nil, ""},
		{"no registry, a name", lease.Registry{}, "eu-west-1", 0, lease.ErrUnknownRegion, "snowfence regions add eu-west-1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := &memStore{m: &memRegistry{reg: c.reg}}
			var asked []int
			hr, err := resolveHolderRegion(context.Background(), openerOf(store, &asked), etcdstore.Config{}, c.text, "", quiet)
			hr.release()
			if len(asked) != 1 || asked[0] != 0 || store.closed != 1 {
				t.Errorf("store opened for regions %v and closed %d times; want once at region 0, closed once", asked, store.closed)
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

// When the registry records the fleet schedule, serve starts only on it,
// and only where its own store's record agrees; the refusal names the
// command that fixes it.
func TestServeChecksRegistrySchedule(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	far := "v1,v2@2099-01-01T00:00:00Z"
	reg := registryOf(lease.Region{Name: "us-east-1", Number: 0, CreatedMs: 1})
	reg.Schedule = far
	for _, c := range []struct {
		name, schedule string
		fleet          lease.FleetSchedule
		want           string // "" to start
	}{
		{"all agree", far, lease.FleetSchedule{Text: far, Version: 1}, ""},
		{"default schedule", "", lease.FleetSchedule{Text: far, Version: 1}, "restart it with --schedule '" + far + "'"},
		{"another cutover", "v1,v2@2098-01-01T00:00:00Z", lease.FleetSchedule{Text: far, Version: 1}, "snowfence schedule set SCHEDULE"},
		{"store missed the change", far, lease.FleetSchedule{Text: "v1"}, "snowfence regions sync"},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := &memStore{m: &memRegistry{reg: reg}, fleet: c.fleet}
			var asked []int
			_, err := resolveHolderRegion(context.Background(), openerOf(store, &asked), etcdstore.Config{}, "us-east-1", c.schedule, quiet)
			if c.want == "" {
				if err != nil {
					t.Fatalf("--schedule %q: %v", c.schedule, err)
				}
				return
			}
			if !errors.Is(err, lease.ErrSchedule) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("--schedule %q with the store at %q: %v; want ErrSchedule saying %q", c.schedule, c.fleet.Text, err, c.want)
			}
		})
	}
}

// A region that records its home starts only on that copy's store: a
// holder resolving us-east-1 on the store of copy eu-west-1 (which
// resolves every region too) is refused, naming both stores and what to
// do; on its home store it starts, and a region with no home recorded
// starts on any.
func TestServeRefusesAnotherRegionsStore(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	us := &memStore{m: &memRegistry{}}
	eu := &memStore{m: &memRegistry{}}
	cs := []lease.RegistryCopy{{Name: "us-east-1", Store: us}, {Name: "eu-west-1", Store: eu}}
	for _, add := range []struct{ region, home string }{{"us-east-1", "us-east-1"}, {"eu-west-1", "eu-west-1"}, {"old-style", ""}} {
		if _, err := lease.UpdateRegistry(ctx, cs, func(r lease.Registry) (lease.Registry, error) {
			next, _, err := r.WithRegionHome(add.region, add.home, 1, 8)
			return next, err
		}); err != nil {
			t.Fatal(err)
		}
	}
	euID, _ := eu.RegistryIdentity(ctx)
	usID, _ := us.RegistryIdentity(ctx)
	for _, c := range []struct {
		name   string
		store  *memStore
		region string
		want   []string // nil to start
	}{
		{"us-east-1 on its home store", us, "us-east-1", nil},
		{"eu-west-1 on its home store", eu, "eu-west-1", nil},
		{"us-east-1 on eu-west-1's store", eu, "us-east-1", []string{"leases from copy us-east-1 (" + usID + ")", "this holder's store is " + euID, "store flags of the region's own store", "no command records a new home"}},
		{"eu-west-1 on us-east-1's store", us, "eu-west-1", []string{"leases from copy eu-west-1"}},
		{"no home recorded", eu, "old-style", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked []int
			hr, err := resolveHolderRegion(ctx, openerOf(c.store, &asked), etcdstore.Config{}, c.region, "", quiet)
			hr.release()
			if c.want == nil {
				if err != nil {
					t.Fatalf("--region %s: %v", c.region, err)
				}
				return
			}
			if !errors.Is(err, lease.ErrWrongHome) {
				t.Fatalf("--region %s: %v; want ErrWrongHome", c.region, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("--region %s: %q; want it to say %q", c.region, err, w)
				}
			}
		})
	}
}
