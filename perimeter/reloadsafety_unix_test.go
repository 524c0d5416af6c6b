//go:build unix

package perimeter

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestReloadRefusesDevZero: a callers file replaced by a symbolic link to
// /dev/zero (endless) is refused at once, before a byte is read, and the
// last good callers stay.
func TestReloadRefusesDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	r := newCallersRig(t, allowOrders)
	replace(t, r.path, func(p string) error { return os.Symlink("/dev/zero", p) })
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := reloadWithin(t, r.p)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrNotRegularFile) || !strings.Contains(err.Error(), r.path) || !strings.Contains(err.Error(), "a character device") {
		t.Fatalf("Reload of a link to /dev/zero: %v; want ErrNotRegularFile naming %s and a character device", err, r.path)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > MaxCallersFileSize {
		t.Fatalf("Reload of a link to /dev/zero allocated %d bytes; want less than the cap (%d)", grew, MaxCallersFileSize)
	}
	if !r.allows(orders) {
		t.Fatal("the last good callers are gone")
	}
}

// TestReloadRefusesAFIFO: a callers file replaced by a named pipe with no
// writer is refused without blocking (the open is non-blocking, the kind
// checked on the descriptor), and the last good callers stay.
func TestReloadRefusesAFIFO(t *testing.T) {
	r := newCallersRig(t, allowOrders)
	replace(t, r.path, func(p string) error { return syscall.Mkfifo(p, 0o600) })
	err := reloadWithin(t, r.p)
	if !errors.Is(err, ErrNotRegularFile) || !strings.Contains(err.Error(), "a named pipe") {
		t.Fatalf("Reload of a FIFO: %v; want ErrNotRegularFile naming a named pipe", err)
	}
	if !r.allows(orders) {
		t.Fatal("the last good callers are gone")
	}
}
