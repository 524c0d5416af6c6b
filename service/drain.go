package service

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
)

// conns tracks the state of the server's connections (http.Server's
// ConnState hook), so that shutdown can tell requests still in flight from
// connections that never sent one.
type conns struct {
	mu    sync.Mutex
	state map[net.Conn]http.ConnState
}

func newConns() *conns { return &conns{state: map[net.Conn]http.ConnState{}} }

// track is the http.Server.ConnState hook.
func (c *conns) track(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == http.StateClosed || s == http.StateHijacked {
		delete(c.state, conn)
		return
	}
	c.state[conn] = s
}

// active is how many connections are serving a request.
func (c *conns) active() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.state {
		if s == http.StateActive {
			n++
		}
	}
	return n
}

// shutdown stops hs gracefully within ctx. net/http waits up to 5 s for a
// connection that was opened but has sent no request yet (a client's spare
// connection); if ctx ends while only such connections are left, shutdown
// closes them and succeeds, returning how many it closed. With a request
// still in flight at the deadline it fails with ctx's error.
func shutdown(ctx context.Context, hs *http.Server, c *conns) (unused int, err error) {
	err = hs.Shutdown(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || c.active() > 0 {
		return 0, err
	}
	c.mu.Lock()
	unused = len(c.state)
	c.mu.Unlock()
	return unused, hs.Close()
}
