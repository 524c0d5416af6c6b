package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
)

// dupsFiles writes the planted files: 97301141913751557 three times (in two
// files), 121150311008464896 twice, a file with none, bad lines.
func dupsFiles(t *testing.T) (dir string, a, b, none string) {
	t.Helper()
	dir = t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a = write("a.txt", "97301141913751557\n121150311008464896\nbad one\n97301141913751557\r\n\n5\n")
	b = write("b.txt", "121150311008464896\r\nbad two\r\n97301141913751557")
	none = write("none.txt", "1\n2\n3\n")
	return dir, a, b, none
}

func TestDupsCommand(t *testing.T) {
	dir, a, b, none := dupsFiles(t)
	// The two bad lines are accepted (--max-bad 2); without, they fail the
	// run (below).
	code, out, errOut := runCLI(t, "dups", a, b, none, "--tmp", dir, "--max-bad", "2")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (duplicates found); stderr %q", code, errOut)
	}
	want := "97301141913751557 count=3 layout=v1 created_at=2026-09-26T12:00:00.000Z region=0 machine=37 sequence=5\n" +
		"121150311008464896 count=2 layout=v1 created_at=2026-12-01T07:28:05.008Z region=0 machine=359 sequence=0\n"
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	for _, w := range []string{a + ":3: not an ID: \"bad one\"", b + ":2: not an ID: \"bad two\"",
		"read 9 IDs from 3 files, 2 bad lines; 2 IDs occur more than once, 3 extra copies", "snowfence dups: duplicates found"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
	if code, out, errOut := runCLI(t, "dups", none); code != 0 || out != "" || !strings.Contains(errOut, "0 IDs occur more than once") {
		t.Errorf("the file with none: exit %d, stdout %q, stderr %q; want 0", code, out, errOut)
	}
	// A bad line may hide a duplicate: more than --max-bad (default 0)
	// fail the run with status 2 and the count, duplicates found or not.
	if code, _, errOut := runCLI(t, "dups", a, b, "--max-bad", "1"); code != 2 || !strings.Contains(errOut, "2 lines could not be read as IDs (more than --max-bad 1)") {
		t.Errorf("2 bad lines, --max-bad 1: exit %d, stderr %q; want 2 with the count", code, errOut)
	}
	if code, _, errOut := runCLI(t, "dups", a, "--max-bad", "-1"); code != 2 || !strings.Contains(errOut, "--max-bad") {
		t.Errorf("--max-bad -1: exit %d, stderr %q; want a usage error", code, errOut)
	}
}

// TestDupsDamagedInput: input that cannot be read whole fails the run.
// A CSV quote left open swallows every line after it into one field (the
// finder once read 1,000 copies of an ID that way, found nothing and
// exited 0): the lines it spans are counted, named, and fail the run; a
// file of garbage fails it too.
func TestDupsDamagedInput(t *testing.T) {
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("n,id\n1,97301141913751557\n2,\"121150311008464896\n")
	for i := range 1000 {
		fmt.Fprintf(&csv, "%d,97301141913751557\n", i+3)
	}
	p := filepath.Join(dir, "export.csv")
	os.WriteFile(p, []byte(csv.String()), 0o600)
	code, out, errOut := runCLI(t, "dups", p, "--column", "id")
	if code != 2 || out != "" {
		t.Fatalf("a CSV with an open quote: exit %d, stdout %q; want 2 and nothing found; stderr %q", code, out, errOut)
	}
	for _, w := range []string{"lines 3-1003 were read as one field", "1001 lines could not be read as IDs"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
	garbage := filepath.Join(dir, "garbage.txt")
	os.WriteFile(garbage, []byte("<html>\nnot\nids\n"), 0o600)
	if code, _, errOut := runCLI(t, "dups", garbage); code != 2 || !strings.Contains(errOut, "3 lines could not be read as IDs") {
		t.Errorf("a file of garbage: exit %d, stderr %q; want 2", code, errOut)
	}
}

func TestDupsCommandJSONAndPartitions(t *testing.T) {
	dir, a, b, _ := dupsFiles(t)
	code, out, errOut := runCLI(t, "dups", "--json", "--memory", "64KiB", "--tmp", dir, "--show-bad", "1", "--max-bad", "2", a, b)
	if code != 1 {
		t.Fatalf("exit %d; stderr %q", code, errOut)
	}
	got := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var d struct {
			ID     string `json:"id"`
			Count  int64  `json:"count"`
			Decode struct {
				Machine int `json:"machine"`
			} `json:"decode"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got[d.ID] = d.Count
		if d.ID == "97301141913751557" && d.Decode.Machine != 37 {
			t.Errorf("decode of %s: machine %d, want 37", d.ID, d.Decode.Machine)
		}
	}
	if len(got) != 2 || got["97301141913751557"] != 3 || got["121150311008464896"] != 2 {
		t.Errorf("--json found %v", got)
	}
	if !strings.Contains(errOut, "bad one") || strings.Contains(errOut, "bad two") || !strings.Contains(errOut, "… and 1 more bad lines") {
		t.Errorf("--show-bad 1: stderr %q", errOut)
	}
	if left, _ := os.ReadDir(dir); len(left) != 3 {
		t.Errorf("%d entries in --tmp after the run, want the 3 input files", len(left))
	}
}

func TestDupsCommandCSV(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "export.csv")
	os.WriteFile(p, []byte("n,id\n1,\"97301141913751557\"\n2,97301141913751557\n"), 0o600)
	if code, out, errOut := runCLI(t, "dups", p, "--column", "id"); code != 1 || !strings.HasPrefix(out, "97301141913751557 count=2") {
		t.Errorf("--column id: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "dups", p, "--column", "uid"); code != 2 || !strings.Contains(errOut, `no column "uid"`) {
		t.Errorf("--column uid: exit %d, stderr %q; want 2", code, errOut)
	}
}

func TestDupsCommandWho(t *testing.T) {
	_, a, _, _ := dupsFiles(t)
	var out, errOut bytes.Buffer
	e := env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	who := func(_ context.Context, id snowfence.ID) (string, error) {
		if id == 97301141913751557 {
			return "host-a pid 7", nil
		}
		return "", errors.New("not in the journal")
	}
	os.WriteFile(a+"2", []byte("121150311008464896\n"), 0o600)
	err := dupsWith(context.Background(), e, []string{a, a + "2", "--max-bad", "1"}, who)
	if !errors.Is(err, errDuplicatesFound) {
		t.Fatalf("dupsWith: %v", err)
	}
	for _, w := range []string{`machine=37 sequence=5 who="host-a pid 7"`, `sequence=0 who_error="not in the journal"`} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, out.String())
		}
	}
}

func TestDupsCommandErrors(t *testing.T) {
	_, a, _, _ := dupsFiles(t)
	// Enough IDs to spill out of a 64 KiB budget, so --tmp is used.
	var big strings.Builder
	for i := range 20_000 {
		fmt.Fprintln(&big, 1_000_000+i)
	}
	spills := filepath.Join(filepath.Dir(a), "big.txt")
	if err := os.WriteFile(spills, []byte(big.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"dups"},
		{"dups", a, "--memory", "lots"},
		{"dups", a, "--memory", "1KiB"},
		{"dups", a, "--memory", "5TB"},
		{"dups", a, "--schedule", "v9"},
		{"dups", a, "--column", "0"},
		{"dups", filepath.Join(filepath.Dir(a), "missing.txt")},
		{"dups", spills, "--tmp", filepath.Join(filepath.Dir(a), "no", "such", "dir"), "--memory", "64KiB"},
	} {
		if code, out, errOut := runCLI(t, args...); code != 2 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2", args, code, out, errOut)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"512MiB", 512 << 20}, {"512M", 512 << 20}, {"2GiB", 2 << 30}, {"64KiB", 64 << 10}, {"65536", 65536}, {"100B", 100},
		{"", -1}, {"0", -1}, {"-1M", -1}, {"1.5G", -1}, {"5TB", -1}, {"M", -1}, {"99999999999G", -1},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if tt.want < 0 && err == nil || tt.want >= 0 && (err != nil || got != tt.want) {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}
