package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/snowfence/snowfence/server"
)

// TestServePublicIDPermissions: with --public-id-keys alone, who may open
// and who may seal IDs of its choosing are left to the perimeter's callers
// file ("open_public_ids", "seal_public_ids"; without one, nobody);
// --public-id-open-without-tls lets every caller do both, since a caller
// that may open learns every internal ID outright. Minting sealed IDs needs
// neither.
func TestServePublicIDPermissions(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys": {"1": {"status": "primary", "key": "8d2b4f6a1c0e3957b8a6d4c2e0f19b7a"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e := env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	for _, tc := range []struct {
		name    string
		args    []string
		anyOpen bool
	}{
		{"keys alone", []string{"--public-id-keys", keys}, false},
		{"open without TLS", []string{"--public-id-keys", keys, "--public-id-open-without-tls"}, true},
	} {
		f, fs, err := parseServeFlags(e, tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cfg, err := f.config(e, fs)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		sc := cfg.service
		if sc.PublicIDKeys == nil {
			t.Fatalf("%s: no keyset", tc.name)
		}
		_, opens := sc.PublicIDOpeners.(server.AnyCallerOpens)
		_, seals := sc.PublicIDSealers.(server.AnyCallerOpens)
		if opens != tc.anyOpen || seals != tc.anyOpen {
			t.Errorf("%s: every caller opens %v, seals %v; want %v for both", tc.name, opens, seals, tc.anyOpen)
		}
		if !tc.anyOpen && (sc.PublicIDOpeners != nil || sc.PublicIDSealers != nil) {
			t.Errorf("%s: openers %v, sealers %v; want both nil (the perimeter's callers file)", tc.name, sc.PublicIDOpeners, sc.PublicIDSealers)
		}
	}
}
