package freeport

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

func TestLoopbackPortsAreDistinctAndFree(t *testing.T) {
	ports, err := Loopback(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d twice in %v", p, ports)
		}
		seen[p] = true
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0]))
	if err != nil {
		t.Fatalf("port %d not free: %v", ports[0], err)
	}
	defer l.Close()
	_, err = net.Listen("tcp", l.Addr().String())
	if !InUse(err) {
		t.Errorf("binding a held port: InUse(%v) = false", err)
	}
	if InUse(nil) || InUse(fmt.Errorf("other")) {
		t.Error("InUse true for nil or an unrelated error")
	}
}

// TestLoopbackAvoidsEphemeralRange: a port from the kernel's ephemeral range
// can be taken by any outgoing connection while its server is stopped, so a
// member restarted on it fails to bind.
func TestLoopbackAvoidsEphemeralRange(t *testing.T) {
	first := belowEphemeral()
	if first == 0 && runtime.GOOS == "linux" {
		t.Fatalf("%s unreadable on Linux: Loopback would hand out ephemeral ports", ephemeralRange)
	}
	if first == 0 {
		// Elsewhere the range cannot be read and the kernel chooses: any
		// port above the registered ones will do.
		first = 1 << 16
	}
	ports, err := Loopback(64)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if p < lowest || p >= first {
			t.Errorf("port %d outside [%d, %d)", p, lowest, first)
		}
	}
}

// TestLoopbackNeverHandsAPortOutTwice: a port handed out stays this
// process's, though nothing listens on it (a server stopped, to start
// again on it); a later call, here or in another process, gets others.
func TestLoopbackNeverHandsAPortOutTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		ports, err := Loopback(4)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
}

// TestReserveTakesOverAnEndedProcessesPort: a port recorded for a process
// that no longer runs is free again; one recorded for a running process
// (this one's parent, say) is not.
func TestReserveTakesOverAnEndedProcessesPort(t *testing.T) {
	ports, err := Loopback(2)
	if err != nil {
		t.Fatal(err)
	}
	path := func(p int) string { return filepath.Join(reservations, strconv.Itoa(p)) }
	if err := os.WriteFile(path(ports[0]), []byte("2147483646"), 0o666); err != nil { // no such process
		t.Fatal(err)
	}
	if !reserve(ports[0]) {
		t.Errorf("port %d, recorded for an ended process, not taken", ports[0])
	}
	if err := os.WriteFile(path(ports[1]), []byte(strconv.Itoa(os.Getppid())), 0o666); err != nil {
		t.Fatal(err)
	}
	if reserve(ports[1]) {
		t.Errorf("port %d, recorded for a running process, taken", ports[1])
	}
}
