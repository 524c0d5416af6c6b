package client

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
)

// endpoints is the health of every endpoint. An endpoint is in service until
// FailureThreshold consecutive requests to it fail; it is then probed every
// ProbeInterval and is back in service after RecoveryProbes consecutive
// healthy probes. Requests go to the first endpoint in service, so the
// client returns to a better endpoint only once it has proved healthy.
type endpoints struct {
	threshold, recovery int
	log                 *slog.Logger

	mu   sync.Mutex
	list []endpoint
	// next is the endpoint tried when none is in service: they take turns.
	next int
	// probe wakes the prober when an endpoint is taken out (capacity 1).
	probe chan struct{}
}

type endpoint struct {
	base, mint, health string
	inService          bool
	fails, healthy     int
}

func newEndpoints(s *settings) *endpoints {
	e := &endpoints{threshold: s.FailureThreshold, recovery: s.RecoveryProbes, log: s.Logger, probe: make(chan struct{}, 1)}
	for i, base := range s.Endpoints {
		e.list = append(e.list, endpoint{base: base, mint: s.mintURLs[i], health: s.healthURLs[i], inService: true})
	}
	return e
}

// pick returns the endpoint the next request goes to: the first in service,
// or, when none is, each in turn.
func (e *endpoints) pick() (int, string, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	i := e.firstLocked()
	if i < 0 {
		i = e.next
		e.next = (e.next + 1) % len(e.list)
	}
	return i, e.list[i].base, e.list[i].mint
}

func (e *endpoints) firstLocked() int {
	for i := range e.list {
		if e.list[i].inService {
			return i
		}
	}
	return -1
}

// succeeded records a request to endpoint i that brought IDs. An endpoint
// out of service that answers while none is in service is back in service.
func (e *endpoints) succeeded(i int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep := &e.list[i]
	ep.fails = 0
	if !ep.inService && e.firstLocked() < 0 {
		ep.inService, ep.healthy = true, 0
		e.log.Info("endpoint back in service: it answered while no endpoint was in service", "endpoint", ep.base)
	}
}

// failed records a failed request to endpoint i. It reports whether the
// failure took the endpoint out of service while another is still in
// service, so the next request can go there at once.
func (e *endpoints) failed(i int, err error) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep := &e.list[i]
	ep.fails++
	if !ep.inService || ep.fails < e.threshold {
		return false
	}
	ep.inService, ep.healthy = false, 0
	next := e.firstLocked()
	if next >= 0 {
		e.log.Warn("endpoint out of service; failing over", "endpoint", ep.base, "failures", ep.fails, "error", err, "to", e.list[next].base)
	} else {
		e.log.Warn("endpoint out of service; no endpoint is in service", "endpoint", ep.base, "failures", ep.fails, "error", err)
	}
	select {
	case e.probe <- struct{}{}:
	default:
	}
	return next >= 0
}

// out returns the health URLs of the endpoints out of service, by index.
func (e *endpoints) out() map[int]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var m map[int]string
	for i := range e.list {
		if !e.list[i].inService {
			if m == nil {
				m = map[int]string{}
			}
			m[i] = e.list[i].health
		}
	}
	return m
}

// probed records a probe of endpoint i.
func (e *endpoints) probed(i int, healthy bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep := &e.list[i]
	if ep.inService {
		return
	}
	if !healthy {
		ep.healthy = 0
		return
	}
	ep.healthy++
	if ep.healthy >= e.recovery {
		ep.inService, ep.fails, ep.healthy = true, 0, 0
		e.log.Info("endpoint back in service", "endpoint", ep.base, "healthy_probes", e.recovery)
	}
}

// snapshot returns the first endpoint in service (or -1) and which are.
func (e *endpoints) snapshot() (int, []bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	in := make([]bool, len(e.list))
	for i := range e.list {
		in[i] = e.list[i].inService
	}
	return e.firstLocked(), in
}

// prober probes the endpoints out of service every ProbeInterval, until
// none is out; then it waits for one to be taken out.
func (c *Client) prober() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.eps.probe:
		}
		for out := c.eps.out(); len(out) > 0; out = c.eps.out() {
			if err := c.clock.Sleep(c.ctx, c.s.ProbeInterval); err != nil {
				return
			}
			for i, url := range out {
				c.eps.probed(i, c.probe(url))
			}
		}
	}
}

// probe reports whether GET url answers 200.
func (c *Client) probe(url string) bool {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	// Read the body so that the connection is reused.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode == http.StatusOK
}
