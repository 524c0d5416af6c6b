package perimeter

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// ErrUntrusted is wrapped by the per-request refusal (a 403) of a
// connection whose client certificate was trusted at its handshake but is
// not any more: the CA bundle was reloaded without the CA its chain ends
// in, or a certificate of the chain has expired (or, the wall clock having
// stepped back, is not yet valid) since. crypto/tls checks both only at
// handshakes, and a kept-alive or HTTP/2 connection may never handshake
// again.
var ErrUntrusted = errors.New("perimeter: the connection's client certificate is no longer trusted")

// connKey is the context key of a connection's *connHolder.
type connKey struct{}

// connHolder caches a connection's caller, so a request finds its caller
// with one context lookup and no allocation. A connection's certificate
// never changes, so its identity is computed once; the bucket is looked up
// again only when a reload has changed the callers table, and the chain is
// verified again only when a reload has changed the client CAs.
type connHolder struct {
	caGen uint64 // the client-CA generation in force when the connection was accepted
	v     atomic.Pointer[connCaller]
}

// connCaller is what a connection's requests need to know of it, as of
// one callers table and one client-CA pool.
type connCaller struct {
	gen uint64 // the table generation c was looked up in
	id  string
	has bool    // the connection has an identity
	c   *caller // nil: the caller may not connect

	// With mutual TLS (chain): the chain's trust as of client-CA pool
	// caGen. untrusted, if set, refuses every request; else the chain is
	// valid from notBefore to notAfter, checked on every request.
	chain               bool
	caGen               uint64
	untrusted           error
	notBefore, notAfter time.Time
}

// trust is one generation of the client-CA pool. Every load of the bundle
// is a new generation, published after the handshake configuration that
// carries its pool (see Perimeter.reloadCALocked).
type trust struct {
	gen  uint64
	pool *x509.CertPool
}

// ConnContext is for http.Server.ConnContext: it gives each connection a
// holder in which its first request caches the caller, so that later
// requests on the connection find their bucket without allocating.
// Without it the perimeter works, but works out the identity (allocating)
// and verifies the certificate chain on every request.
func (p *Perimeter) ConnContext(ctx context.Context, _ net.Conn) context.Context {
	h := &connHolder{}
	if tr := p.trust.Load(); tr != nil {
		// The handshake, which comes after this, takes a configuration at
		// least as new as this generation: the chains its requests carry
		// were verified against this pool or a later one.
		h.caGen = tr.gen
	}
	return context.WithValue(ctx, connKey{}, h)
}

// connOf returns what r's connection is as of table t and the client CAs
// in force, from the connection's cache when neither has changed.
func (p *Perimeter) connOf(r *http.Request, t *table) *connCaller {
	var gen uint64
	if t != nil {
		gen = t.gen
	}
	tr := p.trust.Load()
	h, _ := r.Context().Value(connKey{}).(*connHolder)
	var prev *connCaller
	if h != nil {
		prev = h.v.Load()
		if prev != nil && prev.gen == gen && (!prev.chain || prev.caGen == tr.gen) {
			return prev
		}
	}
	cc := &connCaller{}
	if prev != nil {
		*cc = *prev
	} else {
		p.identify(cc, r)
	}
	if cc.chain && (prev == nil || prev.caGen != tr.gen) {
		if prev == nil && h != nil && h.caGen == tr.gen && len(r.TLS.VerifiedChains) > 0 {
			// Verified at the handshake against this very pool.
			cc.caGen, cc.untrusted = tr.gen, nil
			cc.notBefore, cc.notAfter = validity(r.TLS.VerifiedChains)
		} else {
			p.verify(cc, r.TLS.PeerCertificates, tr)
		}
	}
	if prev == nil || prev.gen != gen {
		cc.gen, cc.c = gen, nil
		if cc.has && t != nil {
			cc.c = t.lookup(cc.id, p.now())
		}
	}
	if h != nil {
		h.v.Store(cc)
	}
	return cc
}

// identify sets cc's identity from r's verified certificate.
func (p *Perimeter) identify(cc *connCaller, r *http.Request) {
	switch {
	case r.TLS != nil && len(r.TLS.PeerCertificates) > 0:
		cc.id, cc.has = Identity(r.TLS.PeerCertificates[0])
		cc.chain = p.base != nil
	case p.base == nil:
		cc.has = true // plain HTTP: every request is the one anonymous caller ""
	default: // mutual TLS configured, yet no certificate: not through our listener
		cc.chain, cc.untrusted = true, ErrNoIdentity
		cc.caGen = p.trust.Load().gen
	}
}

// verify verifies the chain certs (leaf first, then the intermediates the
// caller sent) against tr's pool now, as crypto/tls does at a handshake,
// and records the result in cc.
func (p *Perimeter) verify(cc *connCaller, certs []*x509.Certificate, tr *trust) {
	cc.caGen = tr.gen
	now := time.Now()
	opts := x509.VerifyOptions{
		Roots:       tr.pool,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		CurrentTime: now,
	}
	if len(certs) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	chains, err := certs[0].Verify(opts)
	if err != nil {
		cc.untrusted = fmt.Errorf("%w: %q: its chain does not verify against the client CAs in force: %w", ErrUntrusted, cc.id, err)
		p.log.Info("request refused: the connection's certificate is no longer trusted", "caller", cc.id, "error", err.Error())
		return
	}
	cc.untrusted = nil
	cc.notBefore, cc.notAfter = validity(chains)
}

// validity returns the widest window in which one of the verified chains
// is valid whole: a chain is valid while every certificate in it is.
func validity(chains [][]*x509.Certificate) (notBefore, notAfter time.Time) {
	for i, chain := range chains {
		var nb, na time.Time
		for j, c := range chain {
			if j == 0 || c.NotBefore.After(nb) {
				nb = c.NotBefore
			}
			if j == 0 || c.NotAfter.Before(na) {
				na = c.NotAfter
			}
		}
		if i == 0 || na.After(notAfter) {
			notBefore, notAfter = nb, na
		}
	}
	return notBefore, notAfter
}

// trusted returns why the connection's requests are refused at now, or nil.
func (cc *connCaller) trusted(now time.Time) error {
	if !cc.chain {
		return nil
	}
	if cc.untrusted != nil {
		return cc.untrusted
	}
	if now.Before(cc.notBefore) || now.After(cc.notAfter) {
		return fmt.Errorf("%w: %q: its certificate chain is valid from %s to %s, not now (%s)", ErrUntrusted, cc.id,
			cc.notBefore.UTC().Format(time.RFC3339), cc.notAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}
