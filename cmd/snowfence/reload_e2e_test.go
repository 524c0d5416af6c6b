//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestE2EReloadRefusesAFIFOAndStops: serve's callers file replaced by a
// named pipe (no writer) is refused at the next reload instead of blocking
// it: the failure is logged once, snowfence_perimeter_reload_failing shows
// it and the last-success time stops, IDs are still issued under the last
// good file, and SIGTERM then stops serve (before, the reload blocked for
// ever in open(2), and shutdown waited on it).
func TestE2EReloadRefusesAFIFOAndStops(t *testing.T) {
	t.Parallel()
	callers := filepath.Join(t.TempDir(), "callers.json")
	if err := os.WriteFile(callers, []byte(`{"default": {"rate": 1000000, "burst": 100000}, "callers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startService(t, t.TempDir(), "--callers", callers, "--reload-every", "100ms", "--admin-listen", "127.0.0.1:0")
	waitAdminReady(t, s)
	// The FIFO is made beside the file and renamed over it, so that no
	// reload can fall between a remove and a mkfifo and see no file at all
	// (which logs a failure of its own: CI once caught that window).
	fifo := callers + ".fifo"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, callers); err != nil {
		t.Fatal(err)
	}

	// Polled until the service reports the failure, and then until its
	// last success is 1 s (10 periods) old: it must stop advancing.
	metric := func(name string) (float64, bool) {
		for _, line := range strings.Split(call(t, "GET", s.admin+"/metrics", "", "").body, "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, err := strconv.ParseFloat(v, 64)
				return f, err == nil
			}
		}
		return 0, false
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		failing, _ := metric(`snowfence_perimeter_reload_failing{file="callers"}`)
		last, ok := metric(`snowfence_perimeter_reload_last_success_timestamp_seconds{file="callers"}`)
		if failing == 1 && ok && time.Since(time.UnixMilli(int64(last*1e3))) > time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the callers file became a FIFO: reload_failing %v, last success %v (%v ago); want 1, and more than 1 s ago",
				failing, last, time.Since(time.UnixMilli(int64(last*1e3))))
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
	if r := call(t, "POST", s.url+"/v1/ids", "", ""); r.status != 200 {
		t.Fatalf("POST /v1/ids under the last good callers file: %d %s", r.status, r.body)
	}

	s.stop(t) // bounded: fails if serve has not exited 30 s after SIGTERM
	var failed []string
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if strings.Contains(line, "reload failed") {
			failed = append(failed, line)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "named pipe") || !strings.Contains(failed[0], callers) {
		t.Fatalf("reload failures logged over 10+ periods: %q; want one line naming %s as a named pipe", failed, callers)
	}
}
