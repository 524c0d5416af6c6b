package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/snowfence/snowfence/internal/chaos/netns"
)

// cutOff runs one service in its own network namespace, reaching the
// store (etcd's members, PostgreSQL, or the DynamoDB shim) only through
// proxies the harness holds, and cuts those while the service still serves
// callers; another service waits for the same number.
func cutOff(e *Env) error {
	var ns *netns.NS
	if err := netns.Available(); err != nil {
		e.note("no network namespace here (%v): the holder runs in the host namespace behind the same proxies", err)
	} else {
		var err error
		if ns, err = netns.New(fmt.Sprintf("%s%d", NamespacePrefix, os.Getpid())); err != nil {
			return err
		}
		e.cleanups = append(e.cleanups, func() { ns.Close() })
		e.note("the cut-off holder runs in network namespace %s; the store reachable only through the harness's proxies", ns.Name)
	}
	var proxies []*netns.Proxy
	var addrs []string
	for _, target := range e.storeTargets() {
		var ln net.Listener
		var err error
		if ns != nil {
			ln, err = ns.Listen("tcp", "127.0.0.1:0")
		} else {
			ln, err = net.Listen("tcp", "127.0.0.1:0")
		}
		if err != nil {
			return err
		}
		px, err := netns.NewProxy(ln, func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", target)
		})
		if err != nil {
			ln.Close()
			return err
		}
		proxies = append(proxies, px)
		e.cleanups = append(e.cleanups, func() { px.Close() })
		addrs = append(addrs, px.Addr().String())
	}
	fast := serviceConfig{machines: "50-50", leaseTTL: fastTTL, renewEvery: fastRenew, selfFence: fastSelfFence}
	hc := fast
	hc.storeAddrs, hc.ns = addrs, ns
	h, err := e.addService(hc)
	if err != nil {
		return err
	}
	if err := h.waitServing(e.ctx, 60*time.Second); err != nil {
		return err
	}
	oc := fast
	oc.supervise = true // exits while 50 is taken; restarted like a systemd unit
	o, err := e.addService(oc)
	if err != nil {
		return err
	}
	others, err := e.startServices(2, serviceConfig{machines: "51-60"})
	if err != nil {
		return err
	}
	load := e.startLoad(append([]*service{h, o}, others...), loadConfig{callers: 4, rate: 20000, count: 20})
	if err := e.wait(scale(e, 2*time.Second, 20*time.Second)); err != nil {
		return err
	}

	okBefore := h.ok.Load()
	cut := time.Now()
	for _, px := range proxies {
		px.Cut()
	}
	e.logf("cut the holder off from the store")
	if err := e.wait(fastSelfFence / 2); err != nil {
		return err
	}
	e.check("the cut-off holder still serves callers", h.ok.Load() > okBefore, "%d requests answered in the first %v of the cut", h.ok.Load()-okBefore, fastSelfFence/2)
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	for {
		if status, _ := e.healthz(h); status == http.StatusServiceUnavailable {
			break
		}
		if err := pause(ctx, 5*time.Millisecond); err != nil {
			cancel()
			return fmt.Errorf("the cut-off holder still issuing 30 s into the cut")
		}
	}
	cancel()
	e.note("the cut-off holder fenced itself %v after the cut (self-fence %v after its last renewal)", time.Since(cut).Round(time.Millisecond), fastSelfFence)
	if err := o.waitServing(e.ctx, 60*time.Second); err != nil {
		return err
	}
	e.recovered(time.Since(cut), "the waiting holder took number 50")
	if err := e.wait(2 * time.Second); err != nil {
		return err
	}
	for _, px := range proxies {
		px.Heal()
	}
	e.logf("healed")
	if err := e.wait(scale(e, 3*time.Second, 20*time.Second)); err != nil {
		return err
	}
	load.stop()
	_, hMax, _ := e.col.span(int32(h.idx))
	oMin, _, oOK := e.col.span(int32(o.idx))
	e.check("the cut-off holder's IDs all precede the new holder's", oOK && hMax < oMin, "last of cut-off %d, first of new %d", hMax, oMin)
	return nil
}

// NamespacePrefix starts the names of the network namespaces the suite
// creates; netns.Cleanup(NamespacePrefix) removes those a crashed run left.
const NamespacePrefix = netns.Prefix + "run"
