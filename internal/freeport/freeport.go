// Package freeport finds free TCP ports on loopback for servers the tests
// and the chaos suite start (etcd members, most of all, whose peer URLs must
// be known before they bind).
package freeport

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
)

// Loopback returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. All n are held open together so they differ, then closed;
// whoever binds them next may lose a race with another process, so callers
// retry on a bind failure (see InUse).
func Loopback(n int) ([]int, error) {
	ports := make([]int, 0, n)
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("freeport: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// InUse reports whether err is a failure to bind a port someone else
// holds.
func InUse(err error) bool {
	return err != nil && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use"))
}
