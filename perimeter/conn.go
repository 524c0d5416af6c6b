package perimeter

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
)

// connKey is the context key of a connection's *connHolder.
type connKey struct{}

// connHolder caches a connection's caller, so a request finds its caller
// with one context lookup and no allocation. A connection's certificate
// never changes, so its identity is computed once; the bucket is looked up
// again only when a reload has changed the callers table.
type connHolder struct{ v atomic.Pointer[connCaller] }

type connCaller struct {
	gen uint64 // the table generation c was looked up in
	id  string
	has bool    // the connection has an identity
	c   *caller // nil: the caller may not connect
}

// ConnContext is for http.Server.ConnContext: it gives each connection a
// holder in which its first request caches the caller, so that later
// requests on the connection find their bucket without allocating.
// Without it the perimeter works, but works out the identity (allocating)
// on every request.
func (p *Perimeter) ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &connHolder{})
}

// callerOf returns the bucket of r's caller under t, or nil when the caller
// may not take IDs.
func (p *Perimeter) callerOf(r *http.Request, t *table) (*caller, string) {
	h, _ := r.Context().Value(connKey{}).(*connHolder)
	if h != nil {
		if cc := h.v.Load(); cc != nil && cc.gen == t.gen {
			return cc.c, cc.id
		}
	}
	cc := &connCaller{gen: t.gen}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		cc.id, cc.has = Identity(r.TLS.PeerCertificates[0])
	} else if p.base == nil {
		cc.has = true // plain HTTP: every request is the one anonymous caller ""
	}
	if cc.has {
		cc.c = t.lookup(cc.id, p.now())
	}
	if h != nil {
		h.v.Store(cc)
	}
	return cc.c, cc.id
}
