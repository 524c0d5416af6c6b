package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// A region added with a home records it in every copy, and it goes
// through the stored form; a home that is not a copy is refused, by
// WithRegionHome and by the stored form's check.
func TestRegionHomeRecorded(t *testing.T) {
	ctx := context.Background()
	cs := registrytest.MemCopies(2)
	var added registry.Region
	reg, err := registry.Update(ctx, cs, func(r registry.Registry) (registry.Registry, error) {
		next, g, err := r.WithRegionHome("eu-west-1", "copy-2", 1, 8)
		added = g
		return next, err
	})
	if err != nil || added.Home != "copy-2" {
		t.Fatalf("add eu-west-1 with home copy-2: %+v, %v", added, err)
	}
	for _, c := range cs {
		got, _ := c.Store.Registry(ctx)
		if g, ok := got.Named("eu-west-1"); !ok || g.Home != "copy-2" {
			t.Errorf("copy %s: %+v; want eu-west-1 at home in copy-2", c.Name, got)
		}
	}
	body, err := registry.Encode(reg)
	if err != nil || !strings.Contains(string(body), `"home":"copy-2"`) {
		t.Fatalf("Encode: %s, %v; want the home in it", body, err)
	}
	if got, err := registry.Decode(body); err != nil || !got.Equal(reg) {
		t.Fatalf("Decode: %+v, %v; want %+v", got, err, reg)
	}

	if _, _, err := reg.WithRegionHome("us-east-1", "copy-3", 2, 8); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "copy-1, copy-2") {
		t.Errorf("WithRegionHome with a home that is no copy: %v; want ErrInvalid naming the copies", err)
	}
	// Creating the registry: no copies recorded before the change, so the
	// write's check refuses a home that is none of them.
	_, err = registry.Update(ctx, registrytest.MemCopies(2), func(r registry.Registry) (registry.Registry, error) {
		next, _, err := r.WithRegionHome("eu-west-1", "elsewhere", 1, 8)
		return next, err
	})
	if !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("creating the registry with a home that is no copy: %v; want ErrInvalid", err)
	}
	bad := reg
	bad.Regions = []registry.Region{{Name: "eu-west-1", Number: 0, CreatedMs: 1, Home: "copy-9"}}
	if _, err := registry.Encode(bad); !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "copy-9") {
		t.Errorf("Encode of a home that is no copy: %v; want ErrInvalid", err)
	}
	noCopies := registry.Registry{Version: 1, Regions: []registry.Region{{Name: "eu-west-1", Number: 0, CreatedMs: 1, Home: "copy-1"}}}
	if _, err := registry.Encode(noCopies); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Encode of a home in a registry recording no copies: %v; want ErrInvalid", err)
	}
}

// A body written before regions had homes decodes, every Home empty, and
// such a region is not checked.
func TestRegistryBodyWithoutHomes(t *testing.T) {
	body := `{"version":1,"regions":[{"name":"us-east-1","number":0,"created_ms":1}],"copies":["a","b"],"copy_identities":["id-a","id-b"]}`
	reg, err := registry.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	g, ok := reg.Named("us-east-1")
	if !ok || g.Home != "" {
		t.Fatalf("decoded %+v; want us-east-1 with no home", reg)
	}
	if err := registry.CheckHome(reg, g, "anything"); err != nil {
		t.Errorf("CheckHome of a region with no home: %v; want nil", err)
	}
}

// CheckHome accepts a holder on its region's home store and refuses one on
// another copy's store (or on a store the registry knows nothing of), with
// a *HomeError naming both stores and what to do.
func TestCheckHome(t *testing.T) {
	reg := registry.Registry{
		Version:        2,
		Copies:         []string{"eu-west-1-store", "us-east-1-store"},
		CopyIdentities: []string{"id-eu", "id-us"},
		Regions: []registry.Region{
			{Name: "us-east-1", Number: 0, CreatedMs: 1, Home: "us-east-1-store"},
			{Name: "eu-west-1", Number: 1, CreatedMs: 2, Home: "eu-west-1-store"},
		},
	}
	us, _ := reg.Named("us-east-1")
	if err := registry.CheckHome(reg, us, "id-us"); err != nil {
		t.Errorf("us-east-1 on its home store: %v", err)
	}
	for _, own := range []string{"id-eu", "id-unknown"} {
		err := registry.CheckHome(reg, us, own)
		var he *registry.HomeError
		if !errors.Is(err, registry.ErrWrongHome) || !errors.As(err, &he) || he.Recorded != "id-us" || he.Identity != own {
			t.Fatalf("us-east-1 on store %s: %v; want a *HomeError", own, err)
		}
		for _, want := range []string{"us-east-1-store", "id-us", own, "Start the holder with the store flags of the region's own store", "no command records a new home"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("us-east-1 on store %s: %q; want it to say %q", own, err, want)
			}
		}
	}
	// A home whose identity is not recorded cannot be checked: refused.
	old := reg
	old.CopyIdentities = nil
	if err := registry.CheckHome(old, us, "id-us"); !errors.Is(err, registry.ErrWrongHome) || !strings.Contains(err.Error(), "records no identity") {
		t.Errorf("a home with no identity recorded: %v; want ErrWrongHome", err)
	}
}
