// Package freeport finds free TCP ports on loopback for servers the tests
// and the chaos suite start (etcd members, most of all, whose peer URLs must
// be known before they bind).
package freeport

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
		port := l.Addr().(*net.TCPAddr).Port
		if !reserve(port) {
			continue // handed out to a process still running
		}
		ports = append(ports, port)
	}
	return ports, nil
}

// reservations is the directory where Loopback records, one file per port
// holding the process ID, the ports it handed out: a port stays with the
// process it was handed to while that process runs, so a server it stopped
// can start again on it (an etcd member restarted or restored) without
// another test — in this process or another — having been handed the
// port meanwhile. The CI run lost an etcd restore to that once ports came
// from a range only tests pick from.
var reservations = filepath.Join(os.TempDir(), "snowfence-freeport")

// reserve records port as this process's and reports whether it was free
// to take: no file, or one naming a process that no longer runs (or this
// one, which never hands a port out twice while it holds it open).
func reserve(port int) bool {
	if err := os.MkdirAll(reservations, 0o777); err != nil {
		return true // no record to keep: the bind check is all there is
	}
	path := filepath.Join(reservations, strconv.Itoa(port))
	me := strconv.Itoa(os.Getpid())
	for range 2 {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err == nil {
			_, werr := f.WriteString(me)
			cerr := f.Close()
			return werr == nil && cerr == nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return true
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && (pid == os.Getpid() || alive(pid)) {
			return false
		}
		os.Remove(path) // its process ended: the port is free to hand out again
	}
	return false
}

// alive reports whether a process with that ID runs.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
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
