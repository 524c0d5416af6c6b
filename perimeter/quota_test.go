package perimeter

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/server"
)

// quotaCallers gives orders 100 IDs/s in bursts of 1000.
const quotaCallers = `{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 100, "burst": 1000}}}`

// TestQuota429 walks orders' bucket on the fake clock: each refusal's
// headers exactly, and that a refusal takes nothing.
func TestQuota429(t *testing.T) {
	r := newRig(t, quotaCallers, nil)
	c := r.client(r.caller(orders), nil)
	steps := []struct {
		advance time.Duration
		count   int
		status  int
		// Retry-After, RateLimit on a 429
		retry, limit string
	}{
		{0, 1000, 200, "", ""},                                      // the whole burst
		{0, 500, 429, "5", `"ids";r=0;t=5`},                         // empty: 500 at 100/s is 5 s away
		{0, 1, 429, "1", `"ids";r=0;t=1`},                           // 10 ms away rounds up to 1
		{2 * time.Second, 500, 429, "3", `"ids";r=200;t=3`},         // 200 back; the refusals took nothing
		{1500 * time.Millisecond, 500, 429, "2", `"ids";r=350;t=2`}, // 1.5 s short rounds up
		{1500 * time.Millisecond, 500, 200, "", ""},                 // exactly 500 now
		{0, 1, 429, "1", `"ids";r=0;t=1`},
	}
	for i, s := range steps {
		r.clock.Advance(s.advance)
		before := r.issued()
		resp, body, err := r.post(c, "/v1/ids?count="+strconv.Itoa(s.count))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if resp.StatusCode != s.status {
			t.Fatalf("step %d: status %d %s, want %d", i, resp.StatusCode, body, s.status)
		}
		issued := r.issued() - before
		if s.status != 200 {
			if issued != 0 {
				t.Errorf("step %d: a 429 issued %d IDs", i, issued)
			}
			if !strings.Contains(body, `"code":"rate_limited"`) {
				t.Errorf("step %d: body %s, want code rate_limited", i, body)
			}
			for k, want := range map[string]string{"Retry-After": s.retry, "RateLimit": s.limit, "RateLimit-Policy": `"ids";q=1000;w=10`} {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("step %d: %s: %q, want %q", i, k, got, want)
				}
			}
		} else if issued != uint64(s.count) {
			t.Errorf("step %d: issued %d, want %d", i, issued, s.count)
		}
	}
	if got := counter(t, r.p.metrics.throttled.WithLabelValues(orders)); got != 5 {
		t.Errorf("throttled metric %v, want 5", got)
	}
	if got := counter(t, r.p.metrics.issued.WithLabelValues(orders)); got != 1500 {
		t.Errorf("issued metric %v, want 1500", got)
	}
}

// TestQuotaGivenBackWhenMintFails: a granted request the generator refuses
// (503) costs the caller nothing.
func TestQuotaGivenBackWhenMintFails(t *testing.T) {
	r := newRig(t, quotaCallers, func(c *snowfence.Config) { c.Lease = noLease{} })
	c := r.client(r.caller(orders), nil)
	for i := range 3 {
		resp, body, err := r.post(c, "/v1/ids?count=1000")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("request %d: status %d %s, want 503 (fenced)", i, resp.StatusCode, body)
		}
	}
	if got := r.p.callers.Load().listed[orders].lim.TokensAt(r.p.now()); got != 1000 {
		t.Errorf("after three failed mints of 1000 the bucket holds %v, want 1000", got)
	}
}

// TestTakeDone is the grant's contract at the unit level: Done(false)
// gives the IDs back at once, Done(true) keeps them taken.
func TestTakeDone(t *testing.T) {
	r := newRig(t, quotaCallers, nil)
	req := requestFrom(r, orders)
	g, err := r.p.Take(req, 1000)
	if err != nil {
		t.Fatal(err)
	}
	g.Done(false)
	g, err = r.p.Take(req, 1000)
	if err != nil {
		t.Fatalf("after Done(false) the same instant: %v; want the 1000 back", err)
	}
	g.Done(true)
	if _, err := r.p.Take(req, 1); err == nil {
		t.Fatal("after Done(true) the bucket still had IDs")
	}
}

// TestReloadChangesLimitsInPlace: a reload keeps a caller's tokens and
// applies its new rate from then on.
func TestReloadChangesLimitsInPlace(t *testing.T) {
	r := newRig(t, quotaCallers, nil)
	req := requestFrom(r, orders)
	g, err := r.p.Take(req, 1000)
	if err != nil {
		t.Fatal(err)
	}
	g.Done(true)
	if err := r.writeCallers(`{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 1000, "burst": 2000}}}`); err != nil {
		t.Fatal(err)
	}
	if _, err := r.p.Take(req, 1); err == nil {
		t.Fatal("the reload refilled the bucket")
	}
	r.clock.Advance(time.Second)
	if g, err := r.p.Take(req, 1000); err != nil {
		t.Fatalf("one second at the new 1000/s: %v", err)
	} else {
		g.Done(true)
	}
}

// TestUnlistedDefault: with a default policy each unlisted identity has a
// bucket of its own, and all share the "(unlisted)" label.
func TestUnlistedDefault(t *testing.T) {
	r := newRig(t, `{"default": {"rate": 10, "burst": 1000}, "callers": {}}`, nil)
	for _, id := range []string{"spiffe://corp/a", "spiffe://corp/b"} {
		resp, body, err := r.post(r.client(r.caller(id), nil), "/v1/ids?count=1000")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %s %v", id, resp, body, err)
		}
	}
	if got := counter(t, r.p.metrics.issued.WithLabelValues(labelUnlisted)); got != 2000 {
		t.Errorf("(unlisted) issued %v, want 2000", got)
	}
	checkCallerLabels(t, r, labelUnlisted, labelNone)
}

// TestPlainHTTPQuota: without TLS every request is the anonymous caller
// under the default policy.
func TestPlainHTTPQuota(t *testing.T) {
	r := newRig(t, quotaCallers, nil) // for its files
	p, err := New(Config{CallersFile: r.callersFile, PollInterval: -1, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.TLSConfig() != nil {
		t.Error("TLSConfig without TLS files is not nil")
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/ids", nil)
	if _, err := p.Take(req, 1); err == nil {
		t.Error("default deny let the anonymous caller in")
	}
	if err := r.writeCallers(`{"default": {"rate": 10, "burst": 1000}, "callers": {}}`); err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(); err != nil {
		t.Fatal(err)
	}
	g, err := p.Take(req, 1000)
	if err != nil {
		t.Fatal(err)
	}
	g.Done(true)
	if _, err := p.Take(req, 1); err == nil {
		t.Error("the anonymous caller's bucket did not run out")
	}
}

// BenchmarkTake is the quota's cost per granted request on a cached
// connection.
func BenchmarkTake(b *testing.B) {
	r := newRig(b, `{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 1e9, "burst": 1000000000}}}`, nil)
	req := requestFrom(r, orders)
	b.ReportAllocs()
	for b.Loop() {
		g, err := r.p.Take(req, 1)
		if err != nil {
			b.Fatal(err)
		}
		g.Done(true)
	}
}

// requestFrom is a request on a connection (with ConnContext's holder) from
// a certificate naming id.
func requestFrom(r *rig, id string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/v1/ids", nil)
	req = req.WithContext(r.p.ConnContext(req.Context(), nil))
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{r.caller(id).Cert}}
	return req
}

// noLease fences the generator: it has no grant, and nothing else of its
// own.
type noLease struct{}

func (noLease) GrantAt(int64) (*snowfence.Grant, error) { return nil, nil }
func (noLease) Schedule() snowfence.Schedule            { return snowfence.Schedule{} }
func (noLease) Clock() snowfence.Clock                  { return nil }
func (noLease) Placements() []snowfence.Placement       { return nil }
func (noLease) Bind() error                             { return nil }
func (noLease) MarkReached(*snowfence.Grant)            {}

// skewClock is a fake clock whose every reading is, at random, the time or
// up to 50 ms before it: a reading that went stale before its request
// reached the bucket, as under preemption or contention.
type skewClock struct {
	*fakeclock.Clock
	rnd *rand.Rand
}

func (c *skewClock) Now() snowfence.Reading {
	r := c.Clock.Now()
	if c.rnd.IntN(2) == 0 {
		r.Mono -= time.Duration(c.rnd.IntN(50)) * time.Millisecond
	}
	return r
}

// TestQuotaNeverOverGrants: whatever the order of stale readings, grants
// that are kept and grants given back (Done(false)), a caller keeps at most
// burst + rate × elapsed IDs.
func TestQuotaNeverOverGrants(t *testing.T) {
	for seed := range uint64(20) {
		clk := &skewClock{Clock: fakeclock.New(time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC)), rnd: rand.New(rand.NewPCG(seed, 1))}
		file := filepath.Join(t.TempDir(), "callers.json")
		if err := os.WriteFile(file, []byte(`{"default": {"rate": 1000, "burst": 1000}, "callers": {}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := New(Config{CallersFile: file, PollInterval: -1, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/v1/ids", nil)
		req = req.WithContext(p.ConnContext(req.Context(), nil))
		start := clk.Clock.Now().Mono
		kept := 0
		var pending []server.QuotaGrant
		for range 2000 {
			clk.Advance(time.Duration(clk.rnd.IntN(5)) * time.Millisecond)
			if len(pending) > 0 && clk.rnd.IntN(3) == 0 { // a mint ends
				i := clk.rnd.IntN(len(pending))
				g, n := pending[i], 0
				pending = slices.Delete(pending, i, i+1)
				if clk.rnd.IntN(4) != 0 {
					n = g.(*grant).n
					g.Done(true)
				} else {
					g.Done(false)
				}
				kept += n
			}
			n := 1 + clk.rnd.IntN(400)
			if g, err := p.Take(req, n); err == nil {
				pending = append(pending, g)
			}
		}
		for _, g := range pending {
			kept += g.(*grant).n
			g.Done(true)
		}
		elapsed := clk.Clock.Now().Mono - start
		if limit := 1000 + int(elapsed.Seconds()*1000); kept > limit {
			t.Errorf("seed %d: kept %d IDs in %v at 1,000/s in bursts of 1,000 (at most %d)", seed, kept, elapsed, limit)
		}
		p.Close()
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

// TestQuotaStaleNowNeverRewindsBucket: a request whose clock reading is older
// than another's never rewinds the caller's bucket, so concurrency grants no
// IDs beyond the quota (an adversarial review found it did). Take reads the
// clock, then reserves from the bucket; golang.org/x/time/rate sets the
// limiter's last update to the time it is given even when that is earlier than
// the last update, so a request whose reading is older than another's (it read
// the clock first and reserved second) rewinds the bucket and the time between
// the two readings is credited again. Under concurrency every such pair hands
// the caller rate × gap IDs more than its quota. Here a caller at 1,000 IDs/s
// with a burst of 1,000 takes 2,500 IDs in one second.
func TestQuotaStaleNowNeverRewindsBucket(t *testing.T) {
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

// TestQuotaTinyRateStatesItsWait: a rate so low that the wait is longer
// than a time.Duration holds (1e-9 IDs/s: 1,000 IDs are 1e12 s away) is
// refused with the longest wait, not an overflow to Retry-After: 1.
func TestQuotaTinyRateStatesItsWait(t *testing.T) {
	r := newRig(t, `{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 1e-9, "burst": 1000}}}`, nil)
	c := r.client(r.caller(orders), nil)
	if resp, body, err := r.post(c, "/v1/ids?count=1000"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the burst: %v %v %s", err, resp, body)
	}
	resp, body, err := r.post(c, "/v1/ids?count=1000")
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("past the burst: %v %v %s", err, resp, body)
	}
	longest := strconv.FormatInt(int64(maxWaitSecs), 10)
	for k, want := range map[string]string{
		"Retry-After":      strconv.FormatInt(int64(maxWaitSecs)+1, 10), // the longest duration, rounded up
		"RateLimit":        `"ids";r=0;t=` + longest,
		"RateLimit-Policy": `"ids";q=1000;w=` + longest,
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}
