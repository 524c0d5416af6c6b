package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Proxy forwards every connection accepted on a listener to a connection
// its dial function opens, byte for byte in both directions, and can
// partition them: see Cut and Heal.
type Proxy struct {
	ln     net.Listener
	dial   func(ctx context.Context) (net.Conn, error)
	ctx    context.Context // ends at Close, cancelling dials
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every link

	mu        sync.Mutex
	idle      *sync.Cond // signalled when writing drops to zero
	cut       bool
	closed    bool
	writing   int // forwards in progress, on any link
	links     map[*link]struct{}
	acceptErr error // why the accept loop stopped, unless Close stopped it
}

// NewProxy starts forwarding every connection accepted on ln to a connection
// dial opens for it; dial's context ends when the proxy closes or the
// accepted connection does. The proxy owns ln from now on.
func NewProxy(ln net.Listener, dial func(ctx context.Context) (net.Conn, error)) (*Proxy, error) {
	if ln == nil || dial == nil {
		return nil, errors.New("netns: NewProxy needs a listener and a dial function")
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{ln: ln, dial: dial, ctx: ctx, cancel: cancel, links: make(map[*link]struct{})}
	p.idle = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr returns the address the proxy accepts connections on.
func (p *Proxy) Addr() net.Addr { return p.ln.Addr() }

// Cut partitions the proxy. When Cut returns, no byte crosses any current
// connection in either direction, not even an end of stream: they stay
// open, as a network partition looks to both ends. Writes blocked in
// progress are interrupted, and what was read but not yet written is
// dropped. Connections accepted from now on are held without being
// forwarded; one whose dial is in progress keeps the dialed connection open
// but unused. Cutting a cut or closed proxy does nothing.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut || p.closed {
		return
	}
	p.cut = true
	past := time.Unix(1, 0)
	for l := range p.links {
		l.held = true
		l.client.SetWriteDeadline(past)
		if l.server != nil {
			l.server.SetWriteDeadline(past)
		}
	}
	for p.writing > 0 {
		p.idle.Wait()
	}
}

// Heal ends the partition: the connections held through it are closed on
// both sides, as TCP gives up on connections after a long partition, and
// connections accepted from now on are forwarded again. Healing a proxy
// that is not cut does nothing.
func (p *Proxy) Heal() {
	p.mu.Lock()
	if !p.cut {
		p.mu.Unlock()
		return
	}
	p.cut = false
	var held []*link
	for l := range p.links {
		if l.held {
			held = append(held, l)
		}
	}
	p.mu.Unlock()
	for _, l := range held {
		p.closeLink(l)
	}
}

// Close stops the proxy: it closes the listener and every connection, and
// waits for the proxy's goroutines to end. It returns the error that
// stopped accepting early, if any. Closing twice returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()

	lnErr := p.ln.Close()
	if errors.Is(lnErr, net.ErrClosed) {
		lnErr = nil
	}
	p.cancel()
	for _, l := range links {
		p.closeLink(l)
	}
	p.wg.Wait()
	if lnErr != nil {
		lnErr = fmt.Errorf("netns: close proxy listener %s: %w", p.ln.Addr(), lnErr)
	}
	p.mu.Lock()
	acceptErr := p.acceptErr
	p.mu.Unlock()
	if acceptErr != nil {
		acceptErr = fmt.Errorf("netns: proxy on %s stopped accepting: %w", p.ln.Addr(), acceptErr)
	}
	return errors.Join(acceptErr, lnErr)
}

// serve accepts connections until the listener fails or closes.
func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			if c != nil {
				c.Close()
			}
			return
		}
		if err != nil {
			p.acceptErr = err
			p.mu.Unlock()
			return
		}
		ctx, cancel := context.WithCancel(p.ctx)
		l := &link{client: c, held: p.cut, ctx: ctx, cancel: cancel, done: make(chan struct{})}
		p.links[l] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.run(l)
	}
}
