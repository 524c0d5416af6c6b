package lease

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// highWaterHeader is the first line of a high-water file.
const highWaterHeader = "snowfence high-water mark v1"

// HighWaterFile is a HighWater kept in one small file: its mark as Unix ms
// and as the same instant in RFC 3339, under a header line, e.g.
//
//	snowfence high-water mark v1
//	1796421698000 2026-12-04T22:01:38.000Z
//
// The two forms must agree, so that a file damaged in place is refused
// rather than read as another mark. Store replaces it atomically: a
// temporary file beside it is written and synced, renamed over it, and the
// directory synced, so that a crash leaves the old mark or the new one.
//
// Keep it outside what a restore of the store puts back (beside the
// embedded etcd's data directory, not in it: embedetcd's default), and give
// each process its own.
type HighWaterFile struct {
	path string
	// firstStart: a missing file means no mark yet (Load returns 0), as
	// at a first start; otherwise it is refused.
	firstStart bool
}

// NewHighWaterFile returns the HighWater kept in the file at path.
// firstStart says what a missing file means: true, no mark yet (a first
// start, or a store never used before); false, a refusal (ErrHighWater
// wrapping fs.ErrNotExist), for a caller that knows the store has a
// history the file should have been kept beside.
func NewHighWaterFile(path string, firstStart bool) HighWaterFile {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return HighWaterFile{path: filepath.Clean(path), firstStart: firstStart}
}

// Path returns the file's path (absolute when it could be made so).
func (f HighWaterFile) Path() string { return f.path }

// Load implements HighWater: the mark in the file, 0 for a missing file at
// a first start. A missing file otherwise, one that cannot be read, or one
// that is not a high-water file with agreeing forms of its mark is
// refused with ErrHighWater.
func (f HighWaterFile) Load() (int64, error) {
	fh, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) && f.firstStart {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%w: high-water file %s: %w", ErrHighWater, f.path, err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, 4096))
	if err != nil {
		return 0, fmt.Errorf("%w: high-water file %s: %w", ErrHighWater, f.path, err)
	}
	ms, err := parseHighWater(b)
	if err != nil {
		return 0, fmt.Errorf("%w: high-water file %s is corrupt: %v", ErrHighWater, f.path, err)
	}
	return ms, nil
}

// parseHighWater reads a high-water file's content.
func parseHighWater(b []byte) (int64, error) {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 || lines[0] != highWaterHeader {
		return 0, fmt.Errorf("want the line %q and a mark, found %q", highWaterHeader, b)
	}
	num, at, ok := strings.Cut(lines[1], " ")
	ms, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || ms < 0 {
		return 0, fmt.Errorf("the mark %q is not Unix ms and an RFC 3339 instant", lines[1])
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil || t.UnixMilli() != ms {
		return 0, fmt.Errorf("the mark's two forms disagree: %d is %s, not %q", ms, FormatMs(ms), at)
	}
	return ms, nil
}

// formatHighWater is a high-water file's content for markMs.
func formatHighWater(markMs int64) []byte {
	return []byte(fmt.Sprintf("%s\n%d %s\n", highWaterHeader, markMs, FormatMs(markMs)))
}

// Store implements HighWater: it replaces the file atomically and durably
// (see HighWaterFile).
func (f HighWaterFile) Store(markMs int64) error {
	if err := writeFileSynced(f.path, formatHighWater(markMs)); err != nil {
		return fmt.Errorf("high-water file %s: %w", f.path, err)
	}
	return nil
}

// writeFileSynced replaces path with data: a temporary file in the same
// directory, synced, renamed over path, and the directory synced, so that
// after a crash path holds either its old content or data.
func writeFileSynced(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone already after the rename
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
