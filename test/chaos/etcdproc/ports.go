//go:build linux

package etcdproc

import (
	"errors"
	"fmt"
	"net"
)

// attempts is how many times Start tries fresh ports before giving up.
const attempts = 5

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment
// ago. All n are held open together so they differ, then closed; a member
// binding one may lose a race with another process, so Start retries on a
// bind failure (see addrInUse).
func freePorts(n int) ([]int, error) {
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
			return nil, fmt.Errorf("etcdproc: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// addrInUse reports whether err is a member exiting because another process
// held one of its ports.
func addrInUse(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.AddrInUse()
}
