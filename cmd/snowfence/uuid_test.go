package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
)

func TestUUIDCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "uuid", "-n", "5000")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5000 {
		t.Fatalf("%d lines, want 5000", len(lines))
	}
	var prev snowfence.UUID
	for i, l := range lines {
		u, err := snowfence.ParseUUID(l)
		if err != nil || u.String() != l || u.Version() != 7 {
			t.Fatalf("line %d %q: %v, version %d", i, l, err, u.Version())
		}
		if i > 0 && prev.Compare(u) >= 0 {
			t.Fatalf("line %d %s is not above %s", i, u, prev)
		}
		prev = u
	}
	if code, out, _ := runCLI(t, "uuid"); code != 0 || len(out) != 37 {
		t.Errorf("uuid: exit %d, %q", code, out)
	}
	for _, args := range [][]string{{"uuid", "-n", "0"}, {"uuid", "-n", "x"}, {"uuid", "extra"}, {"uuid", "-n", "10000001"}} {
		if code, out, errOut := runCLI(t, args...); code != 2 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2", args, code, out, errOut)
		}
	}
}

func TestDecodeUUIDForm(t *testing.T) {
	const v8 = "01a0dd96-2600-802b-8d76-fc0012802b88" // 97301141913751557
	code, out, errOut := runCLI(t, "decode", strings.ToUpper(v8))
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"id          97301141913751557", "uuid        " + v8, "machine     37"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "decode", v8, "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || got["uuid"] != v8 || got["id"] != "97301141913751557" {
		t.Errorf("--json: exit %d, %s", code, out)
	}
	for _, bad := range []string{
		"01a0dd96-2600-802b-8d76-fc0012802b89", // check broken
		"{01a0dd96-2600-802b-8d76-fc0012802b88}",
	} {
		if code, out, errOut := runCLI(t, "decode", bad); code != 2 || out != "" || errOut == "" || strings.Contains(errOut, "snowfence: ") {
			t.Errorf("decode %s: exit %d, stdout %q, stderr %q; want exit 2, the library's prefix not repeated", bad, code, out, errOut)
		}
	}
	// A UUIDv7 (snowfence uuid prints them) decodes to its timestamp: it
	// was refused as "not the UUID form of a snowfence ID".
	code, out, errOut = runCLI(t, "decode", "0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f")
	if code != 0 || !strings.Contains(out, "version     7") || !strings.Contains(out, "created_at  2025-10-02T12:40:43.792Z") {
		t.Errorf("decode of a UUIDv7: exit %d, stdout %q, stderr %q; want its timestamp", code, out, errOut)
	}
}

// TestDecodeNilUUIDRefused: snowfence decode refuses the Nil UUID as not one
// of ours (exit 2), as the server's decode does. It read a 36-character
// argument as a UUID and only called FromUUID when the UUID was not the zero
// one, so the Nil UUID skipped the check that refuses foreign UUIDs and was
// decoded as ID 0 (exit 0, a made-up decoding).
func TestDecodeNilUUIDRefused(t *testing.T) {
	code, out, errOut := runCLI(t, "decode", "00000000-0000-0000-0000-000000000000")
	if code != 2 || out != "" || errOut == "" {
		t.Errorf("decode of the Nil UUID: exit %d, stdout %q, stderr %q; want exit 2 (not one of ours)", code, out, errOut)
	}
}
