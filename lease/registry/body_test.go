package registry_test

import (
	"errors"
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// A registry goes through its stored form unchanged; a body that is not
// one a change can have written is an error, never the zero Registry.
func TestRegistryBody(t *testing.T) {
	r, _, err := registry.Registry{}.WithRegion("eu-west-1", 1767225600000, 8)
	if err != nil {
		t.Fatal(err)
	}
	r, _, _ = r.WithRegion("us-east-1", 1767225600001, 8)
	r, _, _ = r.WithRetired("eu-west-1", 1767225600002)
	body, err := registry.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := registry.Decode(body)
	if err != nil || !got.Equal(r) {
		t.Fatalf("Decode(Encode(%+v)) = %+v, %v", r, got, err)
	}
	for name, body := range map[string]string{
		"empty":        ``,
		"not JSON":     `eu-west-1=0`,
		"empty object": `{}`,
		"version 0":    `{"version":0,"regions":[]}`,
		"a list":       `[{"name":"a","number":0}]`,
		"bad name":     `{"version":1,"regions":[{"name":"EU","number":0}]}`,
		"number twice": `{"version":2,"regions":[{"name":"a","number":0},{"name":"b","number":0}]}`,
	} {
		if got, err := registry.Decode([]byte(body)); err == nil {
			t.Errorf("Decode(%s: %q) = %+v; want an error", name, body, got)
		}
	}
	if _, err := registry.Encode(registry.Registry{}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("Encode(zero) = %v; want ErrInvalid", err)
	}
}
