//go:build unix

package perimeter

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// TestReloadRefusesDevZero: a callers file replaced by a symbolic link to
// /dev/zero (endless) is refused at once, before a byte is read, and the
// last good callers stay.
func TestReloadRefusesDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		testenv.Missing(t, "no /dev/zero to link the callers file to: "+err.Error())
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

// TestReadOpenedRefusesAFIFO: a named pipe swapped in after readRegular's
// first look is refused by the check on the descriptor, and the open does
// not wait for a writer.
func TestReadOpenedRefusesAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "callers.json")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readOpened(path, MaxCallersFileSize)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegularFile) || !strings.Contains(err.Error(), "a named pipe") {
			t.Fatalf("readOpened of a FIFO: %v; want ErrNotRegularFile naming a named pipe", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("readOpened of a FIFO has not returned after 10 s: the open blocks")
	}
}

// TestReloadRefusesASocketWithoutOpeningIt: a path that is not a regular
// file is refused on its first look, before any open (opening some
// devices has effects of its own): a Unix socket, which open(2) cannot
// open at all, is named as a socket, not reported as an open's ENXIO.
func TestReloadRefusesASocketWithoutOpeningIt(t *testing.T) {
	r := newCallersRig(t, allowOrders)
	replace(t, r.path, func(p string) error {
		ln, err := net.Listen("unix", p)
		if err == nil {
			t.Cleanup(func() { ln.Close() })
		}
		return err
	})
	if err := reloadWithin(t, r.p); !errors.Is(err, ErrNotRegularFile) || !strings.Contains(err.Error(), "a socket") {
		t.Fatalf("Reload of a socket: %v; want ErrNotRegularFile naming a socket", err)
	}
}
