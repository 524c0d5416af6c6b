package k8sstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// TestConfigCheck: each field's zero value is its default, and what the
// store cannot take is lease.ErrInvalid saying what to fix.
func TestConfigCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string // "" for a valid Config; else a part of the error
	}{
		{"namespace only", Config{Namespace: "fleet"}, ""},
		{"every field", Config{Namespace: "fleet", Prefix: "ids-a", Region: 7, RestoreWindow: 10 * time.Minute, RequestTimeout: time.Second}, ""},
		{"prefix of the bound", Config{Namespace: "fleet", Prefix: strings.Repeat("a", MaxPrefixLen)}, ""},
		{"no namespace", Config{}, "no Namespace"},
		{"namespace upper case", Config{Namespace: "Fleet"}, "not a namespace name"},
		{"prefix too long", Config{Namespace: "fleet", Prefix: strings.Repeat("a", MaxPrefixLen+1)}, "at most 40"},
		{"prefix upper case", Config{Namespace: "fleet", Prefix: "Snow"}, "Prefix"},
		{"prefix with a dot", Config{Namespace: "fleet", Prefix: "snow.fence"}, "Prefix"},
		{"prefix ends with a dash", Config{Namespace: "fleet", Prefix: "snow-"}, "Prefix"},
		{"negative region", Config{Namespace: "fleet", Region: -1}, "region -1"},
		{"region too large", Config{Namespace: "fleet", Region: 1 << 31}, "region 2147483648"},
		{"negative restore window", Config{Namespace: "fleet", RestoreWindow: -time.Second}, "RestoreWindow"},
		{"negative request timeout", Config{Namespace: "fleet", RequestTimeout: -time.Second}, "RequestTimeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Check()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Check() = %v, want nil", err)
			case c.want != "" && (!errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Check() = %v, want lease.ErrInvalid mentioning %q", err, c.want)
			}
		})
	}
}

// TestConfigDefaults: the defaults the zero values stand for.
func TestConfigDefaults(t *testing.T) {
	cfg, err := Config{Namespace: "fleet"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Prefix != DefaultPrefix || cfg.RestoreWindow != DefaultRestoreWindow || cfg.RequestTimeout != DefaultRequestTimeout ||
		cfg.Clock == nil || cfg.Logger == nil {
		t.Errorf("defaults: prefix %q, restore window %v, request timeout %v, clock %v, logger %v", cfg.Prefix, cfg.RestoreWindow,
			cfg.RequestTimeout, cfg.Clock, cfg.Logger)
	}
}

// TestNames: a keyspace's object names, and that a name of another
// keyspace or another prefix is none of this store's numbers.
func TestNames(t *testing.T) {
	cfg, _ := Config{Namespace: "fleet", Region: 3}.withDefaults()
	s := newStore(nil, cfg)
	if got, want := s.name(17), "snowfence-r3-17"; got != want {
		t.Errorf("name(17) = %q, want %q", got, want)
	}
	if got, want := s.originName(), "snowfence-origin"; got != want {
		t.Errorf("originName() = %q, want %q", got, want)
	}
	for _, c := range []struct {
		name string
		n    int
		ok   bool
	}{
		{"snowfence-r3-17", 17, true},
		{"snowfence-r3-0", 0, true},
		{"snowfence-r3-017", 0, false},
		{"snowfence-r3--1", 0, false},
		{"snowfence-r30-17", 0, false},
		{"snowfence-r3-17x", 0, false},
		{"other-r3-17", 0, false},
		{"snowfence-origin", 0, false},
	} {
		if n, ok := s.numberOf(c.name); n != c.n || ok != c.ok {
			t.Errorf("numberOf(%q) = %d, %v; want %d, %v", c.name, n, ok, c.n, c.ok)
		}
	}
}
