package client

import (
	"errors"
	"net/http"
	"testing"
)

// TestRedirectNotFollowed: a redirect is a failed attempt, like any other
// non-200: an endpoint that answers a mint with a 307 to another host does not
// make the client mint there. The Client's own http.Client followed redirects
// (the default CheckRedirect; an adversarial review found it), and a 307 keeps
// the method, so the POST was re-sent to the Location and the IDs of whatever
// answered there, a server that is not in Config.Endpoints and may mint in
// another ID space, were handed out as if the endpoint had issued them.
func TestRedirectNotFollowed(t *testing.T) {
	elsewhere := newScripted(t, nil)
	elsewhere.next.Store(1 << 40) // another ID space
	elsewhere.script = []func(http.ResponseWriter, *http.Request){elsewhere.ok}
	endpoint := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.ts.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})
	c := newClient(t, Config{Endpoints: []string{endpoint.ts.URL}, MaxAttempts: 1, MinRefill: 4})
	id, err := c.Next(ctxT(t))
	if err == nil {
		t.Errorf("Next = %d from %s, which is not an endpoint (the endpoint answered 307 to it); want an error", id, elsewhere.ts.URL)
	}
	if n := elsewhere.count(); n != 0 {
		t.Errorf("the client sent %d mint requests to the redirect's target; want 0", n)
	}
}

// TestRedirectNotFollowedOwnHTTPClient: with Config.HTTPClient a client that
// follows redirects (the default), the IDs of the redirect's target are
// still not handed out.
func TestRedirectNotFollowedOwnHTTPClient(t *testing.T) {
	elsewhere := newScripted(t, nil)
	elsewhere.next.Store(1 << 40)
	elsewhere.script = []func(http.ResponseWriter, *http.Request){elsewhere.ok}
	endpoint := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.ts.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	c := newClient(t, Config{Endpoints: []string{endpoint.ts.URL}, HTTPClient: hc, MaxAttempts: 1, MinRefill: 4})
	id, err := c.Next(ctxT(t))
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrBadResponse) {
		t.Errorf("Next = %d, %v; want ErrUnavailable with ErrBadResponse (the answer came after a redirect)", id, err)
	}
}
