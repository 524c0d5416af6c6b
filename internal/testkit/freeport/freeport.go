// Package freeport finds free TCP ports on loopback for servers the tests
// and the chaos suite start (etcd members, most of all, whose peer URLs must
// be known before they bind).
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"syscall"
)

// lowest is the first port Loopback considers: above the registered ports
// most servers on a developer's machine use.
const lowest = 10000

// ephemeralRange is where Linux keeps the range it picks outgoing
// connections' source ports from.
const ephemeralRange = "/proc/sys/net/ipv4/ip_local_port_range"

// Loopback returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. All n are held open together so they differ, then closed;
// whoever binds them next may lose a race with another process, so callers
// retry on a bind failure (see InUse).
//
// The ports come from below the kernel's ephemeral range when it can be
// read. A server stopped and started again on its old port (an etcd member
// restarted or restored) would otherwise find the port taken by some
// client's outgoing connection, which the kernel numbers from that range;
// the long search lost its etcd worlds to exactly this after 15 minutes.
func Loopback(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	low, high := lowest, belowEphemeral()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if high > low && tries < 100*n {
			addr = fmt.Sprintf("127.0.0.1:%d", low+rand.IntN(high-low))
		}
		l, err := net.Listen("tcp", addr)
		if InUse(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("freeport: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// belowEphemeral returns the first port of the kernel's ephemeral range, or
// 0 when it cannot be read (Loopback then lets the kernel choose).
func belowEphemeral() int {
	b, err := os.ReadFile(ephemeralRange)
	if err != nil {
		return 0
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil || first <= lowest {
		return 0
	}
	return first
}

// InUse reports whether err is a failure to bind a port someone else
// holds.
func InUse(err error) bool {
	return err != nil && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use"))
}
