package k8sproc

import (
	"io"
	"net"
	"sync"
	"time"
)

// relay forwards TCP connections from its loopback port to the API
// server's, byte for byte (the TLS session is the API server's). Blocked,
// it closes every connection it carries and every new one at once: the
// holders find the API server gone, as when it is down.
type relay struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	blocked bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// newRelay listens on a free loopback port and forwards to target.
func newRelay(target string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.serve)
	return r, nil
}

// addr is the relay's host:port.
func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		if !r.track(c) {
			c.Close()
			continue
		}
		r.wg.Go(func() { r.forward(c) })
	}
}

// track registers c unless the relay is blocked.
func (r *relay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.blocked {
		return false
	}
	for _, c := range cs {
		r.conns[c] = struct{}{}
	}
	return true
}

func (r *relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		delete(r.conns, c)
		c.Close()
	}
}

// forward carries c to the target until either side ends.
func (r *relay) forward(c net.Conn) {
	defer r.untrack(c)
	up, err := net.DialTimeout("tcp", r.target, 5*time.Second)
	if err != nil {
		return // the API server is down: the client sees its connection end
	}
	if !r.track(up) {
		up.Close()
		return
	}
	defer r.untrack(up)
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done // one direction ended: end both (the deferred untracks close them)
}

// block closes every connection and refuses new ones until unblock.
func (r *relay) block() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blocked = true
	for c := range r.conns {
		c.Close()
	}
}

// unblock lets connections through again.
func (r *relay) unblock() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blocked = false
}

// close stops the relay and every connection it carries.
func (r *relay) close() {
	r.ln.Close()
	r.block()
	r.wg.Wait()
}
