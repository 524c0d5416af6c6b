package netns

import (
	"fmt"
	"net/netip"
	"sync"
)

// LinkPrefix starts the host-side name of every virtual Ethernet pair this
// package creates. Interface names are at most 15 bytes (IFNAMSIZ − 1).
const LinkPrefix = "sfch-"

// maxLinkLen bounds an interface name, as the kernel does.
const maxLinkLen = 15

// Veth is a pair of virtual Ethernet interfaces joining a named namespace
// to the host namespace over a /30 of its own: the host end has the
// subnet's first address, the namespace end its second, and each side's
// connected route reaches the other, so no other route is needed. Faults
// are made on it with the kernel: Down takes the host end's link down, and
// Impair puts a queueing discipline (tc netem, tbf) on both ends.
type Veth struct {
	// Host is the host end's interface name; Inside the namespace end's.
	Host, Inside string
	// HostAddr and InsideAddr are the two ends' addresses.
	HostAddr, InsideAddr netip.Addr

	ns     *NS
	ip, tc string // paths of the ip and tc commands; tc "" if missing

	mu       sync.Mutex
	impaired bool
	closed   bool
}

// String names the pair for logs and reports.
func (v *Veth) String() string {
	return fmt.Sprintf("veth %s (%s) ↔ %s:%s (%s)", v.Host, v.HostAddr, v.ns.Name, v.Inside, v.InsideAddr)
}

// checkVeth accepts a host-side name that starts with LinkPrefix, an
// inside name, both of at most 15 bytes of [A-Za-z0-9._-], and a private
// IPv4 /30.
func checkVeth(host, inside string, subnet netip.Prefix) error {
	for _, name := range []string{host, inside} {
		if name == "" || len(name) > maxLinkLen {
			return fmt.Errorf("%w: interface name %q: 1 to %d bytes", ErrInvalidName, name, maxLinkLen)
		}
		for _, r := range name {
			ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
			if !ok {
				return fmt.Errorf("%w: interface name %q has %q; use [A-Za-z0-9._-]", ErrInvalidName, name, r)
			}
		}
	}
	if len(host) <= len(LinkPrefix) || host[:len(LinkPrefix)] != LinkPrefix {
		return fmt.Errorf("%w: host interface %q does not start with %q", ErrInvalidName, host, LinkPrefix)
	}
	if !subnet.IsValid() || !subnet.Addr().Is4() || subnet.Bits() != 30 || !subnet.Addr().IsPrivate() {
		return fmt.Errorf("%w: %v is not a private IPv4 /30", ErrInvalidAddress, subnet)
	}
	return nil
}

// vethAddrs are the host and inside addresses of a /30: its first and
// second host addresses.
func vethAddrs(subnet netip.Prefix) (host, inside netip.Addr) {
	host = subnet.Masked().Addr().Next()
	return host, host.Next()
}
