package etcdstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease/registry"
)

// TestRegistryKeySharedByRegions: the region registry lives in one key,
// <prefix>/registry, that the stores of every region under the prefix
// read: written through region 0, region 1 reads it, and writing it again
// through region 1 succeeds without a second version; the two regions'
// stores, named as two copies, are refused: they are one.
func TestRegistryKeySharedByRegions(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	prefix := prefixFor(t)
	r0 := newStore(t, cli, etcdstore.Config{Prefix: prefix})
	r1 := newStore(t, cli, etcdstore.Config{Prefix: prefix, Region: 1})
	// The two regions' stores are one copy (one identity): named as two,
	// they are refused.
	if _, err := registry.AddRegion(ctxFor(t), []registry.Copy{{Name: "copy-r0", Store: r0}, {Name: "copy-r1", Store: r1}}, "eu-west-1", baseMs(), 8); !errors.Is(err, registry.ErrCopyIdentity) {
		t.Fatalf("AddRegion on two regions of one prefix as two copies = %v; want ErrCopyIdentity", err)
	}
	g, err := registry.AddRegion(ctxFor(t), []registry.Copy{{Name: "copy-r0", Store: r0}}, "eu-west-1", baseMs(), 8)
	if err != nil || g.Number != 0 {
		t.Fatalf("AddRegion on region 0 of the prefix = %+v, %v; want number 0", g, err)
	}
	reg, err := r1.Registry(ctxFor(t))
	if err != nil || reg.Version != 1 || len(reg.Regions) != 1 {
		t.Fatalf("region 1 reads the registry %+v, %v; want version 1 with eu-west-1", reg, err)
	}
	if err := r1.SetRegistry(ctxFor(t), reg); err != nil {
		t.Fatalf("SetRegistry of the stored registry through region 1 = %v; want nil", err)
	}
	resp, err := cli.Get(ctxFor(t), prefix+"/registry")
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Fatalf("key %s/registry: %v, %v; want it written once", prefix, resp.Kvs, err)
	}
	t.Logf("%s = %s", resp.Kvs[0].Key, resp.Kvs[0].Value)
}

// TestRegistryKeyByHand: a registry key that does not hold a registry is
// an error that says what to do, never an empty registry, and no write
// goes over it.
func TestRegistryKeyByHand(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Start(t, 1).Client(t)
	s := newStore(t, cli, etcdstore.Config{})
	key := prefixFor(t) + "/registry"
	for _, value := range []string{"eu-west-1=0", "{}", `{"version":1,"regions":[{"name":"EU","number":0}]}`} {
		if _, err := cli.Put(ctxFor(t), key, value); err != nil {
			t.Fatal(err)
		}
		reg, err := s.Registry(ctxFor(t))
		if err == nil || !strings.Contains(err.Error(), "put back") {
			t.Fatalf("Registry with %s = %q: %+v, %v; want an error saying what to do", key, value, reg, err)
		}
		t.Logf("%q: %v", value, err)
		next, _, _ := registry.Registry{}.WithRegion("eu-west-1", baseMs(), 8)
		if err := s.SetRegistry(ctxFor(t), next); err == nil || errors.Is(err, registry.ErrConflict) {
			t.Fatalf("SetRegistry over %q: %v; want the read's error", value, err)
		}
		if resp, err := cli.Get(ctxFor(t), key); err != nil || string(resp.Kvs[0].Value) != value {
			t.Fatalf("key after the refused write: %v, %v; want %q", resp.Kvs, err, value)
		}
	}
}
