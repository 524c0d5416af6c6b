//go:build linux

package netns

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
)

// AddVeth creates a virtual Ethernet pair joining n to the host namespace:
// host in the host namespace with subnet's first address, inside in n with
// its second, both up. subnet must be a private IPv4 /30 and host must
// start with LinkPrefix. A leftover interface named host, from a crashed
// run, is deleted first. Close the Veth (or the namespace) to remove it.
func (n *NS) AddVeth(host, inside string, subnet netip.Prefix) (*Veth, error) {
	if n.IsHost() {
		return nil, fmt.Errorf("%w: a veth pair joins a named namespace to the host", ErrInvalidName)
	}
	if err := checkVeth(host, inside, subnet); err != nil {
		return nil, err
	}
	tc, _ := exec.LookPath("tc") // needed by Impair only
	v := &Veth{Host: host, Inside: inside, ns: n, ip: n.ip, tc: tc}
	v.HostAddr, v.InsideAddr = vethAddrs(subnet)
	if _, err := os.Stat("/sys/class/net/" + host); err == nil {
		if err := runIP(n.ip, "link", "del", host); err != nil {
			return nil, fmt.Errorf("netns: delete stale interface %s: %w", host, err)
		}
	}
	if err := runIP(n.ip, "link", "add", host, "type", "veth", "peer", "name", inside, "netns", n.Name); err != nil {
		return nil, fmt.Errorf("netns: create %v: %w", v, err)
	}
	bits := fmt.Sprint(subnet.Bits())
	steps := [][]string{
		{"addr", "add", v.HostAddr.String() + "/" + bits, "dev", host},
		{"link", "set", host, "up"},
		{"-n", n.Name, "addr", "add", v.InsideAddr.String() + "/" + bits, "dev", inside},
		{"-n", n.Name, "link", "set", inside, "up"},
	}
	for _, args := range steps {
		if err := runIP(n.ip, args...); err != nil {
			return nil, errors.Join(fmt.Errorf("netns: set up %v: %w", v, err), v.Close())
		}
	}
	return v, nil
}

// Down takes the host end's link down: the namespace end loses its
// carrier and every packet either way is dropped, so connections stall
// and new ones get no answer to their SYN, as on a cut cable.
func (v *Veth) Down() error { return v.link("down") }

// Up brings the host end's link back up (its address and connected route
// with it).
func (v *Veth) Up() error { return v.link("up") }

func (v *Veth) link(state string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return fmt.Errorf("%w: %v", ErrClosed, v)
	}
	if err := runIP(v.ip, "link", "set", v.Host, state); err != nil {
		return fmt.Errorf("netns: %v: %w", v, err)
	}
	return nil
}

// Impair sets the root queueing discipline of both ends' egress to qdisc
// (tc's words after "root", e.g. "netem", "delay", "200ms"), so both
// directions suffer it; a later Impair replaces it. It fails with
// ErrNoQdisc if the kernel lacks that discipline, and with ErrUnavailable
// if there is no tc command.
func (v *Veth) Impair(qdisc ...string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return fmt.Errorf("%w: %v", ErrClosed, v)
	}
	if v.tc == "" {
		return fmt.Errorf("%w: no tc command", ErrUnavailable)
	}
	v.impaired = true
	for _, args := range [][]string{
		append([]string{"qdisc", "replace", "dev", v.Host, "root"}, qdisc...),
		append([]string{"-n", v.ns.Name, "qdisc", "replace", "dev", v.Inside, "root"}, qdisc...),
	} {
		if err := runIP(v.tc, args...); err != nil {
			if strings.Contains(err.Error(), "qdisc kind is unknown") {
				err = fmt.Errorf("%w (%s): %w", ErrNoQdisc, qdisc[0], err)
			}
			return errors.Join(fmt.Errorf("netns: impair %v: %w", v, err), v.clear())
		}
	}
	return nil
}

// Clear removes what Impair set, on both ends.
func (v *Veth) Clear() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	return v.clear()
}

// clear removes the root qdiscs Impair set; v.mu is held.
func (v *Veth) clear() error {
	if !v.impaired {
		return nil
	}
	v.impaired = false
	var errs []error
	for _, args := range [][]string{
		{"qdisc", "del", "dev", v.Host, "root"},
		{"-n", v.ns.Name, "qdisc", "del", "dev", v.Inside, "root"},
	} {
		// A device without a qdisc of ours answers with one of these.
		if err := runIP(v.tc, args...); err != nil && !strings.Contains(err.Error(), "handle of zero") && !strings.Contains(err.Error(), "No such file") {
			errs = append(errs, fmt.Errorf("netns: clear %v: %w", v, err))
		}
	}
	return errors.Join(errs...)
}

// Supports reports whether the kernel has the queueing discipline qdisc
// (with no parameters), by setting it on both ends and removing it again;
// the error matches ErrNoQdisc if it lacks it.
func (v *Veth) Supports(qdisc string) error {
	if err := v.Impair(qdisc); err != nil {
		return err
	}
	return v.Clear()
}

// Close deletes the pair (both ends, and their qdiscs, go together). It
// does nothing on a second call or if the pair is already gone, as when
// its namespace was deleted with no process left inside.
func (v *Veth) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	if _, err := os.Stat("/sys/class/net/" + v.Host); err != nil {
		return nil
	}
	if err := runIP(v.ip, "link", "del", v.Host); err != nil {
		return fmt.Errorf("netns: delete %v: %w", v, err)
	}
	return nil
}

// CleanupLinks deletes the host-namespace interfaces whose names start with
// prefix, left by crashed runs whose namespaces still had a process inside.
// The prefix must start with LinkPrefix; make it specific to one suite.
func CleanupLinks(prefix string) error {
	if !strings.HasPrefix(prefix, LinkPrefix) {
		return fmt.Errorf("%w: %q does not start with %q", ErrInvalidName, prefix, LinkPrefix)
	}
	entries, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return fmt.Errorf("netns: list interfaces: %w", err)
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return fmt.Errorf("%w: no ip command: %w", ErrUnavailable, err)
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := runIP(ip, "link", "del", e.Name()); err != nil {
				errs = append(errs, fmt.Errorf("netns: delete interface %s: %w", e.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}
