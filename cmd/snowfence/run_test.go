package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDecode(t *testing.T) {
	code, out, errOut := runCLI(t, "decode", "97301141913751557")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"2026-09-26T12:00:00.000Z", "machine     37", "sequence    5", "layout      v1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDecodeJSON(t *testing.T) {
	code, out, _ := runCLI(t, "decode", "683244571854022659", "--json", "--schedule", "v1,v2@2028-01-01T00:00:00Z")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": "683244571854022659", "layout": "v2", "created_at": "2031-03-01T09:30:00.000Z",
		"region": "2", "region_number": 2.0, "machine": 170.0, "sequence": 3.0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("fields = %v", got)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, args := range [][]string{
		{"decode", "12x"},
		{"decode", "-5"},
		{"decode", "9223372036854775808"},
		{"decode"},
		{"decode", "1", "2"},
		{"decode", "1", "--schedule", "v9"},
		{"decode", "--nope", "1"},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") > 3 || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, a short error on stderr", args, code, out, errOut)
		}
	}
}

func TestVersionAndUnknown(t *testing.T) {
	if code, out, _ := runCLI(t, "version"); code != 0 || !strings.HasPrefix(out, "snowfence ") {
		t.Errorf("version: %d %q", code, out)
	}
	if code, _, errOut := runCLI(t, "frobnicate"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Errorf("unknown: %d %q", code, errOut)
	}
}
