package freeport

import (
	"fmt"
	"net"
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
	if first == 0 {
		t.Skipf("%s unreadable: the kernel chooses", ephemeralRange)
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
