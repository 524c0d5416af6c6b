package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/snowfence/snowfence/harness/chaos/netns"
)

// The network scenarios (8a–8c) run holders in network namespaces of
// their own, each joined to the harness's namespace by two virtual
// Ethernet pairs on private /30s:
//
//	holder ──▶ ns 10.237.a.2 ══store veth══ host 10.237.a.1:P ──relay──▶ 127.0.0.1:<store port>
//	caller ──▶ host ══caller veth══ ns 10.237.b.2:<holder HTTP port>
//
// The faults are the kernel's, on the store veth only: its host end's
// link taken down, or a tc netem (or tbf) qdisc on both its ends; the
// callers' veth is never touched, so callers still reach the holders. The
// store's servers listen on the host's loopback, which no other namespace
// can route to, so a relay on the host end of the store veth (a plain
// byte copier, never cut) carries each connection the last hop.

// NamespacePrefix starts the names of the network namespaces the suite
// creates; netns.Cleanup(NamespacePrefix) removes those a crashed run
// left, and with them their veth pairs.
const NamespacePrefix = netns.Prefix + "run"

// The holders' timings in the network scenarios, on every store and in
// both modes, are drawn in netBox (config.go): leases of 7–12 s, renewed
// every 10–25 % of a self-fence of 3–6 s (they were 10 s, 1 s, 5 s). A cut
// then costs seconds, and the TCP retransmission back-off after a cut
// (doubling from 200 ms) stays within the fence for a short cut.

// zone is one holder's network namespace: its store link, on which the
// faults are made, its callers' link, and the store addresses as the
// holder inside dials them (relays on the store link's host end).
type zone struct {
	ns            *netns.NS
	store, caller *netns.Veth
	addrs         []string
}

// zoneBase is the first /30 of the slot's block of 32 addresses in this
// process's block of 256 in 10.237.0.0/16 (by process ID, so concurrent
// runs rarely collide; a collision fails at `ip addr add`, it does not
// misroute). Each store, and etcd's second lane, has a slot of its own
// because the suite runs them side by side in one process.
func zoneBase(slot int) netip.Addr {
	b := (os.Getpid()%256)*256 + slot*32
	return netip.AddrFrom4([4]byte{10, 237, byte(b >> 8), byte(b)})
}

// storeSlot is the store's place in Stores (0–2; ZooKeeper, the fourth,
// 4; Kubernetes 5), which keeps the names and addresses of its zones apart from another
// store's in the same run; laneSlot is etcd's second lane's
// (Options.Lanes). zoneBase has room for 8 slots.
func storeSlot(store string) int {
	i := max(slices.Index(Stores(), store), 0)
	if i >= laneSlot {
		i++
	}
	return i
}

const laneSlot = 3

// newZone creates zone i (0–3) of the scenario and registers its removal
// (namespace, both pairs and their qdiscs, the relays) with the scenario's
// cleanups, which run however the scenario ends, SIGINT included.
func (e *Env) newZone(i int) (*zone, error) {
	if i < 0 || i > 3 {
		return nil, fmt.Errorf("chaos: zone %d: at most 4 per scenario", i)
	}
	slot := e.opts.zoneSlot
	ns, err := netns.New(fmt.Sprintf("%s%d-%d-%d", NamespacePrefix, os.Getpid(), slot, i))
	if err != nil {
		return nil, err
	}
	e.cleanups = append(e.cleanups, func() {
		if err := ns.Close(); err != nil {
			e.note("cleanup: %v", err)
		}
	})
	z := &zone{ns: ns}
	base := zoneBase(slot).As4()
	pid := os.Getpid() % 100000
	for k, v := range []**netns.Veth{&z.store, &z.caller} {
		a := base
		a[3] += byte(8*i + 4*k)
		kind := []string{"s", "c"}[k]
		vv, err := ns.AddVeth(fmt.Sprintf("%s%d-%d%d%s", netns.LinkPrefix, pid, slot, i, kind), kind+"0", netip.PrefixFrom(netip.AddrFrom4(a), 30))
		if err != nil {
			return nil, err
		}
		e.cleanups = append(e.cleanups, func() {
			if err := vv.Close(); err != nil {
				e.note("cleanup: %v", err)
			}
		})
		*v = vv
	}
	for _, target := range e.storeTargets() {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(z.store.HostAddr, 0).String())
		if err != nil {
			return nil, err
		}
		px, err := netns.NewProxy(ln, func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", target)
		})
		if err != nil {
			ln.Close()
			return nil, err
		}
		e.cleanups = append(e.cleanups, func() { px.Close() })
		z.addrs = append(z.addrs, px.Addr().String())
	}
	return z, nil
}

// zoneService starts a service in z on machines, with netTimings, that
// callers reach over z's caller link.
func (e *Env) zoneService(z *zone, machines string) (*service, error) {
	t, err := e.drawTimings(netBox)
	if err != nil {
		return nil, err
	}
	return e.addService(serviceConfig{machines: machines, leaseTTL: t.LeaseFor, renewEvery: t.RenewEvery, selfFence: t.SelfFence, margin: t.Margin,
		storeAddrs: z.addrs, ns: z.ns, listen: netip.AddrPortFrom(z.caller.InsideAddr, 0).String()})
}

// zoneLibrary starts a library holder in z on machines, with netTimings.
func (e *Env) zoneLibrary(z *zone, machines string, generators int) (*library, error) {
	t, err := e.drawTimings(netBox)
	if err != nil {
		return nil, err
	}
	return e.addLibrary(libraryConfig{machines: machines, generators: generators, rate: 5000, batch: 50, margin: t.Margin,
		leaseTTL: t.LeaseFor, renewEvery: t.RenewEvery, selfFence: t.SelfFence, storeAddrs: z.addrs, ns: z.ns})
}

// netWorld is what every network scenario runs: a service in each of two
// zones and a library holder in a third, two services in the host
// namespace beside them, and callers on all four services.
type netWorld struct {
	zones []*zone
	cut   []*service // the services in zones
	host  []*service
	lib   *library
	load  *load
}

// startNetWorld checks that namespaces work here and starts a netWorld.
func (e *Env) startNetWorld() (*netWorld, error) {
	if err := netns.Available(); err != nil {
		return nil, fmt.Errorf("the network scenarios need network namespaces (root with CAP_NET_ADMIN, the ip command): %w", err)
	}
	w := &netWorld{}
	for i := range 3 {
		z, err := e.newZone(i)
		if err != nil {
			return nil, err
		}
		w.zones = append(w.zones, z)
	}
	for i, z := range w.zones[:2] {
		s, err := e.zoneService(z, e.machines(fmt.Sprintf("zone %d service", i), 2, 10))
		if err != nil {
			return nil, err
		}
		w.cut = append(w.cut, s)
	}
	var err error
	if w.lib, err = e.zoneLibrary(w.zones[2], e.machines("zone 2 library holder", 3, 36), 2); err != nil {
		return nil, err
	}
	t, err := e.drawTimings(netBox)
	if err != nil {
		return nil, err
	}
	if w.host, err = e.startServices(2, serviceConfig{machines: e.machines("host services", 3, 20)}.timed(t)); err != nil {
		return nil, err
	}
	if err := e.waitServices(w.cut, 60*time.Second); err != nil {
		return nil, err
	}
	if err := w.lib.waitReady(e.ctx, 60*time.Second); err != nil {
		return nil, err
	}
	e.note("timings: lease %v, renewal every %v, self-fence %v; holders in namespaces: %s, %s (services, callers over their own veth), %s (library); %s, %s in the host namespace",
		t.LeaseFor, t.RenewEvery, t.SelfFence, w.cut[0].name, w.cut[1].name, w.lib.name, w.host[0].name, w.host[1].name)
	w.load = e.startLoad(append(append([]*service{}, w.cut...), w.host...), loadConfig{callers: 6, rate: 20000, count: 20})
	return w, nil
}

// libIssued is the highest ID the zone's library holder's first
// generator has streamed so far.
func (w *netWorld) libIssued(e *Env) int64 {
	_, hi, _ := e.col.span(w.lib.base)
	return hi
}

// waitLibIssuing waits until the library holder streams an ID above
// after, and returns when.
func (w *netWorld) waitLibIssuing(e *Env, after int64, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	for w.libIssued(e) <= after {
		if err := pause(ctx, 5*time.Millisecond); err != nil {
			return time.Time{}, errors.New(w.lib.name + " not issuing again after " + timeout.String())
		}
	}
	return time.Now(), nil
}

// refusals counts the zone holders' refused attempts and library calls.
func (w *netWorld) refusals() (svc, lib int64) {
	for _, s := range w.cut {
		svc += s.refused.Load()
	}
	return svc, w.lib.refusals()
}
