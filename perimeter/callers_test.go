package perimeter

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseCallers(t *testing.T) {
	good := []struct {
		name, in string
		want     *Callers
	}{
		{"deny, two callers", `{"default":"deny","callers":{"spiffe://corp/orders":{"rate":50000,"burst":10000},"billing.corp":{"rate":0.5,"burst":1000}}}`,
			&Callers{Listed: map[string]Policy{orders: {Rate: 50000, Burst: 10000}, billing: {Rate: 0.5, Burst: 1000}}}},
		{"default policy, no callers", ` {"callers": {}, "default": {"burst": 1000, "rate": 1e3}} `,
			&Callers{Listed: map[string]Policy{}, Default: &Policy{Rate: 1000, Burst: 1000}}},
		{"open_public_ids", `{"default": {"rate": 1, "burst": 1000, "open_public_ids": true}, "callers": {"billing.corp": {"rate": 2, "burst": 1000, "open_public_ids": false}, "spiffe://corp/orders": {"open_public_ids": true, "rate": 3, "burst": 1000}}}`,
			&Callers{Listed: map[string]Policy{billing: {Rate: 2, Burst: 1000}, orders: {Rate: 3, Burst: 1000, OpenPublicIDs: true}}, Default: &Policy{Rate: 1, Burst: 1000, OpenPublicIDs: true}}},
		{"seal_public_ids", `{"default": {"rate": 1, "burst": 1000, "seal_public_ids": true}, "callers": {"billing.corp": {"rate": 2, "burst": 1000, "seal_public_ids": false, "open_public_ids": true}, "spiffe://corp/orders": {"seal_public_ids": true, "rate": 3, "burst": 1000, "open_public_ids": true}}}`,
			&Callers{Listed: map[string]Policy{billing: {Rate: 2, Burst: 1000, OpenPublicIDs: true}, orders: {Rate: 3, Burst: 1000, OpenPublicIDs: true, SealPublicIDs: true}}, Default: &Policy{Rate: 1, Burst: 1000, SealPublicIDs: true}}},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCallers([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if (got.Default == nil) != (tc.want.Default == nil) || (got.Default != nil && *got.Default != *tc.want.Default) {
				t.Errorf("Default = %v, want %v", got.Default, tc.want.Default)
			}
			if len(got.Listed) != len(tc.want.Listed) {
				t.Fatalf("Listed = %v, want %v", got.Listed, tc.want.Listed)
			}
			for id, p := range tc.want.Listed {
				if got.Listed[id] != p {
					t.Errorf("Listed[%q] = %v, want %v", id, got.Listed[id], p)
				}
			}
		})
	}
	bad := []struct{ name, in, want string }{
		{"empty", ``, "end of file"},
		{"not an object", `[]`, `want '{'`},
		{"no default", `{"callers":{}}`, `"default" is required`},
		{"no callers", `{"default":"deny"}`, `"callers" is required`},
		{"allow is not a default", `{"default":"allow","callers":{}}`, `want "deny"`},
		{"unknown member", `{"default":"deny","callers":{},"version":1}`, `unknown member "version"`},
		{"case matters", `{"Default":"deny","callers":{}}`, `unknown member "Default"`},
		{"default twice", `{"default":"deny","default":"deny","callers":{}}`, "twice"},
		{"caller twice", `{"default":"deny","callers":{"a":{"rate":1,"burst":1000},"a":{"rate":2,"burst":1000}}}`, "listed twice"},
		{"burst below the largest batch", `{"default":"deny","callers":{"a":{"rate":1,"burst":999}}}`, `"burst" is 999`},
		{"burst fractional", `{"default":"deny","callers":{"a":{"rate":1,"burst":1000.5}}}`, `"burst"`},
		{"burst huge", `{"default":"deny","callers":{"a":{"rate":1,"burst":1e12}}}`, `"burst"`},
		{"rate zero", `{"default":"deny","callers":{"a":{"rate":0,"burst":1000}}}`, `"rate" is 0`},
		{"rate negative", `{"default":{"rate":-1,"burst":1000},"callers":{}}`, `"rate"`},
		{"rate as string", `{"default":"deny","callers":{"a":{"rate":"1","burst":1000}}}`, "want a number"},
		{"rate missing", `{"default":"deny","callers":{"a":{"burst":1000}}}`, "needs both"},
		{"policy member unknown", `{"default":"deny","callers":{"a":{"rate":1,"burst":1000,"weight":2}}}`, `unknown member "weight"`},
		{"open_public_ids twice", `{"default":"deny","callers":{"a":{"rate":1,"burst":1000,"open_public_ids":true,"open_public_ids":true}}}`, `"open_public_ids" appears twice`},
		{"open_public_ids a string", `{"default":"deny","callers":{"a":{"rate":1,"burst":1000,"open_public_ids":"yes"}}}`, "want true or false"},
		{"open_public_ids alone", `{"default":"deny","callers":{"a":{"open_public_ids":true}}}`, "needs both"},
		{"seal_public_ids twice", `{"default":"deny","callers":{"a":{"rate":1,"burst":1000,"seal_public_ids":false,"seal_public_ids":true}}}`, `"seal_public_ids" appears twice`},
		{"seal_public_ids a string", `{"default":"deny","callers":{"a":{"rate":1,"burst":1000,"seal_public_ids":"true"}}}`, `"seal_public_ids": want true or false`},
		{"seal_public_ids a number", `{"default":{"rate":1,"burst":1000,"seal_public_ids":1},"callers":{}}`, `"seal_public_ids": want true or false`},
		{"seal_public_ids null", `{"default":"deny","callers":{"a":{"rate":1,"burst":1000,"seal_public_ids":null}}}`, `"seal_public_ids": want true or false`},
		{"seal_public_ids alone", `{"default":"deny","callers":{"a":{"seal_public_ids":true}}}`, "needs both"},
		{"Seal_public_ids", `{"default":"deny","callers":{"a":{"rate":1,"burst":1000,"Seal_public_ids":true}}}`, `unknown member "Seal_public_ids"`},
		{"seal_public_id", `{"default":"deny","callers":{"a":{"rate":1,"burst":1000,"seal_public_id":true}}}`, `optionally "open_public_ids" and "seal_public_ids"`},
		{"seal_public_ids beside callers", `{"default":"deny","callers":{},"seal_public_ids":true}`, `unknown member "seal_public_ids"`},
		{"Open_public_ids", `{"default":"deny","callers":{"a":{"rate":1,"burst":1000,"Open_public_ids":true}}}`, `unknown member "Open_public_ids"`},
		{"identity empty", `{"default":"deny","callers":{"":{"rate":1,"burst":1000}}}`, "empty"},
		{"identity with space", `{"default":"deny","callers":{"a b":{"rate":1,"burst":1000}}}`, "space"},
		{"identity like a label", `{"default":"deny","callers":{"(unlisted)":{"rate":1,"burst":1000}}}`, `starts with "("`},
		{"identity a wildcard", `{"default":"deny","callers":{"*.corp":{"rate":1,"burst":1000}}}`, "neither an absolute URI"},
		{"identity a relative URI", `{"default":"deny","callers":{"corp/orders":{"rate":1,"burst":1000}}}`, "neither an absolute URI"},
		{"identity a host name with _", `{"default":"deny","callers":{"a_b.corp":{"rate":1,"burst":1000}}}`, "neither an absolute URI"},
		{"identity in upper case", `{"default":"deny","callers":{"Billing.corp":{"rate":1,"burst":1000}}}`, `write "billing.corp"`},
		{"identity a URI spelled otherwise", `{"default":"deny","callers":{"SPIFFE://corp/orders":{"rate":1,"burst":1000}}}`, `write that`},
		{"trailing data", `{"default":"deny","callers":{}} {}`, "trailing"},
		{"truncated", `{"default":"deny","callers":{"a":{"rate":1,`, ""},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCallers([]byte(tc.in))
			if !errors.Is(err, ErrInvalidCallers) {
				t.Fatalf("err = %v, want ErrInvalidCallers", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func FuzzParseCallers(f *testing.F) {
	for _, s := range []string{
		defaultCallers, quotaCallers,
		`{"default":{"rate":1,"burst":1000},"callers":{}}`,
		`{"default":"deny","callers":{"a":{"rate":1,"burst":999}}}`,
		`{"default":"deny","callers":{}} x`,
		`{"default":"deny","callers":{"urn:x:y":{"rate":1,"burst":1000},"*.corp":{"rate":1,"burst":1000}}}`,
		`{"default":{"rate":1,"burst":1000,"seal_public_ids":true,"open_public_ids":false},"callers":{"a.corp":{"rate":1,"burst":1000,"seal_public_ids":true}}}`,
		`{"default":"deny","callers":{"a":{"rate":1,"burst":1000,"seal_public_ids":true,"seal_public_ids":false}}}`,
		`{"default":"deny","callers":{"a":{"rate":1,"burst":1000,"seal_public_ids":"yes"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCallers(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidCallers) {
				t.Fatalf("error %v does not wrap ErrInvalidCallers", err)
			}
			return
		}
		check := func(who string, p Policy) {
			if !(p.Rate > 0) || p.Rate > MaxRate || p.Burst < MinBurst || p.Burst > MaxBurst {
				t.Fatalf("%s: accepted policy %+v out of bounds", who, p)
			}
		}
		if c.Default != nil {
			check("default", *c.Default)
		}
		for id, p := range c.Listed {
			if checkIdentity(id) != nil || !utf8.ValidString(id) {
				t.Fatalf("accepted identity %q", id)
			}
			if u, err := url.Parse(id); isHostName(id) == (err == nil && u.Scheme != "") {
				t.Fatalf("accepted identity %q is both or neither a host name and an absolute URI", id)
			}
			check(id, p)
			if got, listed, ok := c.Lookup(id); !listed || !ok || got != p {
				t.Fatalf("Lookup(%q) = %v, %v, %v", id, got, listed, ok)
			}
		}
	})
}
