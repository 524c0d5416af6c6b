package service

import (
	"container/list"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
)

// connLimits enforces connCaps on the listeners of one service: each
// listener's cap and its cap per peer address, and the budget they share.
// A listener holds up to caps.floor connections whatever the others hold;
// beyond that they draw on the shared part of the budget.
//
// Over a cap a new connection first takes the place of the oldest idle
// keep-alive connection (http.StateIdle) that frees the room it needs: of
// the same address for the per-peer cap, of the same listener for the
// listener's cap, of any listener beyond its floor for the shared budget.
// So a flood of idle connections cannot keep a caller out. With no idle
// connection to close, the new one is refused (refuse) and accepting goes
// on, so the kernel's queue drains and a new caller is answered at once.
//
// Closing an idle connection races with a request arriving on it, as the
// server's own idle timeout does: such a request fails as on a connection
// the server closed, which HTTP clients retry when the request is
// idempotent.
type connLimits struct {
	caps    connCaps
	metrics *connMetrics
	log     *slog.Logger

	mu sync.Mutex
	// shared is how many connections the listeners hold beyond their
	// floors: Σ max(0, open − floor).
	shared    int
	listeners []*limitListener
	lingering int    // refused connections waiting to be read (refuse)
	idleSeq   uint64 // orders the idle connections of every listener
}

func newConnLimits(caps connCaps, m *connMetrics, log *slog.Logger) *connLimits {
	return &connLimits{caps: caps, metrics: m, log: log}
}

// listen wraps ln as the listener name; tls says whether it is served
// behind TLS (a refusal then only closes the connection).
func (cl *connLimits) listen(ln net.Listener, name string, tls bool) *limitListener {
	l := &limitListener{Listener: ln, lim: cl, name: name, tls: tls, peers: map[netip.Addr]*peerConns{},
		m: cl.metrics.forListener(name, cl.caps.perListener), closed: make(chan struct{})}
	l.errs = acceptErrors{log: cl.log, listener: name, rate: rateLog{every: acceptLogEvery}}
	cl.mu.Lock()
	cl.listeners = append(cl.listeners, l)
	cl.mu.Unlock()
	return l
}

// track is the part of the http.Server's ConnState hook that keeps the
// idle connections, the ones a new connection may take the place of.
func (cl *connLimits) track(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if lc.released {
		return
	}
	if s == http.StateIdle {
		lc.l.idle(lc)
	} else {
		lc.l.busy(lc)
	}
}

// A limitListener is a listener under the service's connection caps.
type limitListener struct {
	net.Listener
	lim  *connLimits
	name string
	tls  bool
	m    listenerMetrics
	errs acceptErrors

	closeOnce sync.Once
	closed    chan struct{} // by Close: ends an accept backoff

	// Under lim.mu:
	open   int
	peers  map[netip.Addr]*peerConns
	idlers list.List // of *limitedConn, the longest idle first
}

// peerConns are a listener's connections from one address.
type peerConns struct {
	open   int
	idlers list.List // of *limitedConn, the longest idle first
}

// A limitedConn is a connection a limitListener admitted: closing it frees
// its place.
type limitedConn struct {
	net.Conn
	l        *limitListener
	peer     netip.Addr
	released bool          // its place is free (under lim.mu)
	idleAt   *list.Element // in l.idlers, while idle
	peerAt   *list.Element // in its peerConns' idlers, while idle
	seq      uint64        // when it last went idle (connLimits.idleSeq)
}

// Accept returns the next connection the caps admit, refusing the others;
// a failure to accept for want of descriptors or memory is retried with a
// backoff (acceptErrors), so Accept returns only a connection or the
// listener's own end.
func (l *limitListener) Accept() (net.Conn, error) {
	var backoff acceptBackoff
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !resourceShortage(err) {
				return nil, err
			}
			l.m.accept.Inc()
			l.errs.note(err)
			if !backoff.wait(l.closed) {
				return nil, net.ErrClosed
			}
			continue
		}
		backoff = acceptBackoff{}
		lc, evicted, reason := l.admit(c)
		if evicted != nil {
			evicted.Conn.Close()
		}
		if lc != nil {
			return lc, nil
		}
		l.refuse(c, reason)
	}
}

// Close closes the listener and ends a backoff of Accept.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// admit decides on c: admitted (lc), possibly in the place of an idle
// connection to be closed (evicted), or refused for reason.
func (l *limitListener) admit(c net.Conn) (lc, evicted *limitedConn, reason string) {
	peer := peerOf(c)
	cl := l.lim
	cl.mu.Lock()
	defer cl.mu.Unlock()
	p := l.peers[peer]
	switch {
	case p != nil && p.open >= cl.caps.perPeer:
		if evicted = oldest(&p.idlers); evicted == nil {
			return nil, nil, shedPerPeer
		}
	case l.open >= cl.caps.perListener:
		if evicted = oldest(&l.idlers); evicted == nil {
			return nil, nil, shedTotal
		}
	case l.open >= cl.caps.floor && cl.shared >= cl.caps.shared():
		if evicted = cl.oldestBeyondFloor(l); evicted == nil {
			return nil, nil, shedTotal
		}
	}
	if evicted != nil {
		evicted.l.m.evicted.Inc()
		evicted.l.release(evicted)
	}
	if p = l.peers[peer]; p == nil { // release may have removed it
		p = &peerConns{}
		l.peers[peer] = p
	}
	if l.open >= cl.caps.floor {
		cl.shared++
	}
	l.open++
	p.open++
	l.m.open.Inc()
	return &limitedConn{Conn: c, l: l, peer: peer}, evicted, ""
}

// oldestBeyondFloor is the longest idle connection whose closing frees a
// place in the shared budget for l: one of l's, or of a listener beyond its
// floor. Nil: none is idle.
func (cl *connLimits) oldestBeyondFloor(l *limitListener) *limitedConn {
	var best *list.Element
	for _, o := range cl.listeners {
		if o != l && o.open <= cl.caps.floor {
			continue
		}
		if e := o.idlers.Front(); e != nil && (best == nil || e.Value.(*limitedConn).seq < best.Value.(*limitedConn).seq) {
			best = e
		}
	}
	if best == nil {
		return nil
	}
	return best.Value.(*limitedConn)
}

// oldest is the front of idlers, or nil.
func oldest(idlers *list.List) *limitedConn {
	if e := idlers.Front(); e != nil {
		return e.Value.(*limitedConn)
	}
	return nil
}

// idle marks lc idle: the newest of the idle connections.
func (l *limitListener) idle(lc *limitedConn) {
	if lc.idleAt != nil {
		return
	}
	l.lim.idleSeq++
	lc.seq = l.lim.idleSeq
	lc.idleAt = l.idlers.PushBack(lc)
	lc.peerAt = l.peers[lc.peer].idlers.PushBack(lc)
}

// busy marks lc not idle.
func (l *limitListener) busy(lc *limitedConn) {
	if lc.idleAt == nil {
		return
	}
	l.idlers.Remove(lc.idleAt)
	l.peers[lc.peer].idlers.Remove(lc.peerAt)
	lc.idleAt, lc.peerAt = nil, nil
}

// release frees lc's place, once.
func (l *limitListener) release(lc *limitedConn) {
	if lc.released {
		return
	}
	lc.released = true
	l.busy(lc)
	if l.open > l.lim.caps.floor {
		l.lim.shared--
	}
	l.open--
	p := l.peers[lc.peer]
	if p.open--; p.open == 0 {
		delete(l.peers, lc.peer)
	}
	l.m.open.Dec()
}

// Close frees the connection's place and closes it.
func (lc *limitedConn) Close() error {
	cl := lc.l.lim
	cl.mu.Lock()
	lc.l.release(lc)
	cl.mu.Unlock()
	return lc.Conn.Close()
}

// CloseWrite half-closes the connection, as net/http does before closing
// one after an error response (a 400, a 413), so the caller reads the
// answer rather than a reset: the wrapper must not hide the TCP
// connection's method.
func (lc *limitedConn) CloseWrite() error {
	if cw, ok := lc.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// peerOf is c's remote IP address (the zero Addr for a connection that is
// not TCP: all such share one peer).
func peerOf(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
