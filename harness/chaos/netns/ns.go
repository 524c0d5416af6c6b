package netns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
)

// Prefix starts the name of every namespace this package creates or
// deletes.
const Prefix = "sfchaos-"

// maxNameLen bounds a namespace name; ip keeps it as a file name.
const maxNameLen = 64

// NS is a network namespace: a named one New created, or the host namespace
// Host returns. The zero NS is the host namespace.
type NS struct {
	// Name is the namespace's name under /var/run/netns, or "" for the host
	// namespace.
	Name string

	ip string       // path of the ip command
	mu sync.RWMutex // held for reading while a thread is inside the namespace
	fd int          // the namespace, open; -1 once closed
}

// Host returns the namespace the process runs in. Its Listen, DialContext
// and Command work as the net and os/exec packages do, and its Close does
// nothing: it is what a suite uses where Available fails.
func Host() *NS { return &NS{} }

// IsHost reports whether n is the host namespace rather than one New made.
func (n *NS) IsHost() bool { return n.Name == "" }

// String names the namespace for logs and test reports.
func (n *NS) String() string {
	if n.IsHost() {
		return "host network namespace"
	}
	return "network namespace " + n.Name
}

// Command returns a command that runs name with args inside the namespace.
// For a named namespace the command is `ip netns exec`, which execs name, so
// the started process is name itself: signals sent to cmd.Process reach it.
func (n *NS) Command(name string, args ...string) *exec.Cmd {
	if n.IsHost() {
		return exec.Command(name, args...)
	}
	return exec.Command(n.ip, append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Listen announces on a TCP address with a socket created inside the
// namespace. The host part of addr must be a literal IP or empty, e.g.
// "127.0.0.1:0".
func (n *NS) Listen(network, addr string) (net.Listener, error) {
	if err := checkAddr(network, addr, true); err != nil {
		return nil, err
	}
	if n.IsHost() {
		return net.Listen(network, addr)
	}
	var ln net.Listener
	err := n.do(func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, fmt.Errorf("netns: in %s: %w", n.Name, err)
	}
	return ln, nil
}

// DialContext connects to a TCP address with a socket created inside the
// namespace. The host part of addr must be a literal IP. The connect runs
// on a thread locked into the namespace until it completes or ctx ends.
func (n *NS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := checkAddr(network, addr, false); err != nil {
		return nil, err
	}
	var d net.Dialer
	if n.IsHost() {
		return d.DialContext(ctx, network, addr)
	}
	var c net.Conn
	err := n.do(func() error {
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	if err != nil {
		if c != nil {
			c.Close()
		}
		return nil, fmt.Errorf("netns: in %s: %w", n.Name, err)
	}
	return c, nil
}

// checkAddr accepts a TCP network and an address whose host is a literal IP
// (or, when listening, empty), so that no name is resolved inside a
// namespace.
func checkAddr(network, addr string, listen bool) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("%w: network %q is not tcp, tcp4 or tcp6", ErrInvalidAddress, network)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrInvalidAddress, addr, err)
	}
	if host == "" && listen {
		return nil
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return fmt.Errorf("%w: %q: host must be a literal IP", ErrInvalidAddress, addr)
	}
	return nil
}

// checkName accepts a namespace name, or with prefix set a name prefix,
// that starts with Prefix and holds only [A-Za-z0-9._-].
func checkName(name string, prefix bool) error {
	rest, ok := strings.CutPrefix(name, Prefix)
	switch {
	case !ok:
		return fmt.Errorf("%w: %q does not start with %q", ErrInvalidName, name, Prefix)
	case rest == "" && !prefix:
		return fmt.Errorf("%w: %q has nothing after %q", ErrInvalidName, name, Prefix)
	case len(name) > maxNameLen:
		return fmt.Errorf("%w: %q is longer than %d bytes", ErrInvalidName, name, maxNameLen)
	}
	for _, r := range rest {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return fmt.Errorf("%w: %q has %q; use [A-Za-z0-9._-]", ErrInvalidName, name, r)
		}
	}
	return nil
}
