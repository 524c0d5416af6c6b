package zktest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDropHeaderlessLogs: a transaction log shorter than its header goes,
// one with a header (or more) stays, and so does everything else.
func TestDropHeaderlessLogs(t *testing.T) {
	dir := t.TempDir()
	v2 := filepath.Join(dir, "version-2")
	if err := os.MkdirAll(v2, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]int{"log.100": 0, "log.200": 7, "log.300": 16, "log.400": 4096, "snapshot.0": 0}
	for name, size := range files {
		if err := os.WriteFile(filepath.Join(v2, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dropped, err := dropHeaderlessLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range dropped {
		got = append(got, filepath.Base(p))
	}
	slices.Sort(got)
	if want := []string{"log.100", "log.200"}; !slices.Equal(got, want) {
		t.Errorf("dropped %v, want %v", got, want)
	}
	for name := range files {
		_, err := os.Stat(filepath.Join(v2, name))
		if gone := os.IsNotExist(err); gone != slices.Contains(got, name) {
			t.Errorf("%s: gone %v, dropped %v", name, gone, slices.Contains(got, name))
		}
	}
}
