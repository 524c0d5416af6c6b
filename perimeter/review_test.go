package perimeter

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/testpki"
	"github.com/snowfence/snowfence/server"
)

// TestReviewDNSNameSpelledAsSPIFFEID: a certificate with no URI SAN whose
// DNS SAN is the text of a listed SPIFFE ID is taken for that SPIFFE ID.
// crypto/x509 accepts any IA5 string as a dNSName, so a CA (or a team
// allowed to request DNS names from it, as cert-manager style issuers
// allow) can mint "spiffe://corp/orders" as a DNS name and get orders'
// authorization and quota. Identities of the two kinds should not share a
// namespace: a DNS SAN that is not a host name (it holds ':' or '/'), and
// a URI SAN without a scheme, should name no caller.
func TestReviewDNSNameSpelledAsSPIFFEID(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	leaf := r.ca.Client(t, testpki.Options{DNSNames: []string{orders}})
	if id, ok := Identity(leaf.Cert); ok && id == orders {
		t.Errorf("Identity of a certificate whose only SAN is the DNS name %q = %q: the DNS SAN is taken for the SPIFFE ID", orders, id)
	}
	before := r.issued()
	resp, _, err := r.post(r.client(leaf, nil), "/v1/ids")
	if err == nil && resp.StatusCode == http.StatusOK {
		t.Errorf("a certificate with only a DNS SAN spelled %q got IDs as that caller (%d issued)", orders, r.issued()-before)
	}
	// The reverse: crypto/x509 also takes a relative reference as a URI
	// SAN, so a URI SAN "billing.corp" (no scheme) is the DNS-named caller.
	rel := r.ca.Client(t, testpki.Options{URIs: []string{billing}})
	if id, ok := Identity(rel.Cert); ok && id == billing {
		t.Errorf("Identity of a certificate whose only SAN is the relative URI %q = %q: the URI SAN is taken for the DNS-named caller", billing, id)
	}
}

// TestReviewRemovedCAOpenConnection: after the client CA bundle is
// replaced by one without the CA that signed a caller's certificate, that
// caller's kept-alive connection still mints. A CA is removed from the
// bundle because it must no longer be trusted (compromised, retired);
// removing a caller from the callers file is enforced per request
// (TestRemovedCallerOpenConnection), but removing its CA is enforced only
// at handshakes, and a busy HTTP/2 or keep-alive connection never
// handshakes again.
func TestReviewRemovedCAOpenConnection(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	c := r.client(r.caller(orders), nil)
	if resp, _, err := r.post(c, "/v1/ids"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %v %v", resp, err)
	}
	other := testpki.NewCA(t, "the only trusted CA now")
	writeAtomic(t, r.caFile, other.CertPEM)
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	before := r.issued()
	resp, _, err := r.post(c, "/v1/ids")
	if err == nil && resp.StatusCode == http.StatusOK {
		t.Errorf("a caller whose CA was removed from the bundle got %d IDs on its open connection (resumed %v)", r.issued()-before, resp.TLS.DidResume)
	}
}

// holdClock is a fake clock whose Now can be made to stall after reading
// the time, as a goroutine preempted (or queued on the limiter's mutex)
// between reading the clock and reserving does.
type holdClock struct {
	*fakeclock.Clock
	armed         atomic.Bool
	held, release chan struct{}
}

func (c *holdClock) Now() snowfence.Reading {
	r := c.Clock.Now()
	if c.armed.Load() {
		c.held <- struct{}{}
		<-c.release
	}
	return r
}

// TestReviewQuotaStaleNowRewindsBucket: Take reads the clock, then
// reserves from the bucket; golang.org/x/time/rate sets the limiter's last
// update to the time it is given even when that is earlier than the last
// update, so a request whose reading is older than another's (it read the
// clock first and reserved second) rewinds the bucket and the time
// between the two readings is credited again. Under concurrency every such
// pair hands the caller rate × gap IDs more than its quota. Here a caller
// at 1,000 IDs/s with a burst of 1,000 takes 2,500 IDs in one second.
func TestReviewQuotaStaleNowRewindsBucket(t *testing.T) {
	clk := &holdClock{Clock: fakeclock.New(time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC)),
		held: make(chan struct{}), release: make(chan struct{})}
	dir := t.TempDir()
	file := filepath.Join(dir, "callers.json")
	if err := os.WriteFile(file, []byte(`{"default": {"rate": 1000, "burst": 1000}, "callers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{CallersFile: file, PollInterval: -1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	q := p.Quota()
	req := httptest.NewRequest(http.MethodPost, "/v1/ids?count=1000", nil)
	granted := 0
	take := func(n int) error {
		g, err := q.Take(req, n)
		if err == nil {
			granted += n
			g.Done(true)
		}
		return err
	}
	if err := take(1000); err != nil { // the full bucket, at 0 s
		t.Fatal(err)
	}
	clk.Advance(500 * time.Millisecond)
	clk.armed.Store(true)
	stale := make(chan error, 1)
	go func() {
		g, err := q.Take(req, 1)
		if err == nil {
			g.Done(true)
		}
		stale <- err
	}()
	<-clk.held // the caller lookup's reading
	clk.release <- struct{}{}
	<-clk.held // Take's reading, 0.5 s: stalled before it reserves
	clk.armed.Store(false)
	clk.Advance(500 * time.Millisecond)
	if err := take(1000); err != nil { // 1 s: the 1,000 refilled since 0 s
		t.Fatal(err)
	}
	clk.release <- struct{}{}
	var qe *server.QuotaError
	if err := <-stale; !errors.As(err, &qe) {
		t.Fatalf("the stalled request: %v; want refused, the bucket was empty", err)
	}
	take(500) // still 1 s: the bucket is empty
	if granted > 2000 {
		t.Errorf("granted %d IDs within one second to a caller of 1,000 IDs/s in bursts of 1,000 (at most 2,000)", granted)
	}
}
