package netns

import (
	"context"
	"errors"
	"io"
	"net"
)

// bufSize is what one direction of a link reads at a time.
const bufSize = 32 << 10

// errHeld says a link is held by a cut, or closed: the byte or end of
// stream at hand must not cross.
var errHeld = errors.New("netns: link held")

// link is one forwarded connection: client was accepted, server dialed.
type link struct {
	client net.Conn
	ctx    context.Context // the dial's; cancelled when the link closes
	cancel context.CancelFunc
	done   chan struct{} // closed when the link closes

	// Guarded by Proxy.mu.
	server net.Conn // nil until the dial returns
	held   bool     // a cut holds it; it is closed, not resumed, at Heal
	closed bool
}

// run dials the server side of l and forwards both directions until they
// end, the link is closed, or, once a cut holds it, the link closes.
func (p *Proxy) run(l *link) {
	defer p.wg.Done()
	defer p.forget(l)
	if !p.connect(l) {
		return
	}
	back := make(chan struct{})
	go func() {
		defer close(back)
		p.pipe(l, l.server, l.client)
	}()
	p.pipe(l, l.client, l.server)
	<-back
}

// connect dials the server side of l and reports whether to forward. A held
// link is not dialed: it waits to be closed. A dial that returns during a
// cut is kept open but unused, so its server sees no more than the client
// does, and closed with the link.
func (p *Proxy) connect(l *link) bool {
	p.mu.Lock()
	held := l.held
	p.mu.Unlock()
	if held {
		<-l.done
		return false
	}
	srv, err := p.dial(l.ctx)
	if err != nil || srv == nil {
		if srv != nil {
			srv.Close()
		}
		p.fail(l, p.heldErr(l, err))
		return false
	}
	p.mu.Lock()
	if l.closed {
		p.mu.Unlock()
		srv.Close()
		return false
	}
	l.server = srv
	held = l.held
	p.mu.Unlock()
	if held {
		<-l.done
		return false
	}
	return true
}

// heldErr returns errHeld if a cut holds l, or else err.
func (p *Proxy) heldErr(l *link, err error) error {
	if p.isHeld(l) {
		return errHeld
	}
	return err
}

// pipe copies src to dst, then passes the end of stream on as a half-close
// (or closes the link if dst cannot half-close). A failure closes the link.
// Once a cut holds the link, the next read's bytes, end of stream or error
// go nowhere, and pipe waits for the link to be closed.
func (p *Proxy) pipe(l *link, src, dst net.Conn) {
	buf := make([]byte, bufSize)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			err := p.forward(l, func() error {
				_, err := dst.Write(buf[:n])
				return err
			})
			if err != nil {
				p.fail(l, err)
				return
			}
		}
		if rerr == nil {
			continue
		}
		if errors.Is(rerr, io.EOF) {
			rerr = p.forward(l, func() error { return closeWrite(dst) })
			if rerr == nil {
				return
			}
		}
		p.fail(l, p.heldErr(l, rerr))
		return
	}
}

// forward runs op, a write or half-close on one side of l, unless a cut
// holds l, in which case it returns errHeld; Cut waits for ops in progress.
// An op that fails because a cut interrupted it also returns errHeld.
func (p *Proxy) forward(l *link, op func() error) error {
	p.mu.Lock()
	if l.held || l.closed {
		p.mu.Unlock()
		return errHeld
	}
	p.writing++
	p.mu.Unlock()
	err := op()
	p.mu.Lock()
	p.writing--
	if p.writing == 0 {
		p.idle.Broadcast()
	}
	held := l.held
	p.mu.Unlock()
	if err != nil && held {
		return errHeld
	}
	return err
}

// fail ends one direction of l after err: a held link waits to be closed,
// any other is closed now.
func (p *Proxy) fail(l *link, err error) {
	if errors.Is(err, errHeld) {
		<-l.done
		return
	}
	p.closeLink(l)
}

// isHeld reports whether a cut holds l.
func (p *Proxy) isHeld(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return l.held
}

// closeLink closes both sides of l, once.
func (p *Proxy) closeLink(l *link) {
	p.mu.Lock()
	if l.closed {
		p.mu.Unlock()
		return
	}
	l.closed = true
	srv := l.server
	p.mu.Unlock()
	l.cancel()
	close(l.done)
	l.client.Close()
	if srv != nil {
		srv.Close()
	}
}

// forget closes l and drops it from the proxy.
func (p *Proxy) forget(l *link) {
	p.closeLink(l)
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// closeWrite half-closes c, or reports that it cannot.
func closeWrite(c net.Conn) error {
	if hc, ok := c.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return errors.New("netns: connection cannot half-close")
}
