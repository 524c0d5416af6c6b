package server

import (
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

// fakeQuota records what the server asks and answers with err.
type fakeQuota struct {
	mu    sync.Mutex
	err   error
	asked []int
	done  []bool
}

func (q *fakeQuota) Take(_ *http.Request, n int) (QuotaGrant, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.asked = append(q.asked, n)
	if q.err != nil {
		return nil, q.err
	}
	return fakeGrant{q}, nil
}

type fakeGrant struct{ q *fakeQuota }

func (g fakeGrant) Done(issued bool) {
	g.q.mu.Lock()
	defer g.q.mu.Unlock()
	g.q.done = append(g.q.done, issued)
}

func TestQuotaConsultedWithCount(t *testing.T) {
	q := &fakeQuota{}
	f := newFixture(t, nil, func(c *Config) { c.Quota = q })
	for _, target := range []string{"/v1/ids", "/v1/ids?count=7"} {
		if r := f.post(target, ""); r.status != http.StatusOK {
			t.Fatalf("POST %s: %d %s", target, r.status, r.body)
		}
	}
	if r := f.post("/v1/ids:batch", `{"count":1000}`); r.status != http.StatusOK {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	if r := f.post("/v1/ids?count=0", ""); r.status != http.StatusBadRequest {
		t.Fatalf("count=0: %d, want 400 before the quota", r.status)
	}
	if got, want := q.asked, []int{1, 7, 1000}; !slices.Equal(got, want) {
		t.Errorf("asked %v, want %v", got, want)
	}
	if got := q.done; len(got) != 3 || !got[0] || !got[1] || !got[2] {
		t.Errorf("done %v, want three issued", got)
	}
}

func TestQuotaRefusal(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		status  int
		code    string
		headers map[string]string
	}{
		{"over quota", &QuotaError{RetryAfter: 1500 * time.Millisecond, Policy: `"ids";q=1000;w=10`, Limit: `"ids";r=250;t=2`, Message: "spiffe://corp/orders asked for 1000"},
			http.StatusTooManyRequests, CodeRateLimited,
			map[string]string{"Retry-After": "2", "RateLimit-Policy": `"ids";q=1000;w=10`, "RateLimit": `"ids";r=250;t=2`}},
		{"under a second rounds up to 1", &QuotaError{RetryAfter: time.Millisecond},
			http.StatusTooManyRequests, CodeRateLimited, map[string]string{"Retry-After": "1", "RateLimit": ""}},
		{"zero is 1", &QuotaError{}, http.StatusTooManyRequests, CodeRateLimited, map[string]string{"Retry-After": "1"}},
		{"whole seconds stay", &QuotaError{RetryAfter: 3 * time.Second}, http.StatusTooManyRequests, CodeRateLimited, map[string]string{"Retry-After": "3"}},
		{"denied", errors.New("perimeter: caller x is not allowed"), http.StatusForbidden, CodeForbidden, map[string]string{"Retry-After": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := &fakeQuota{err: tc.err}
			f := newFixture(t, nil, func(c *Config) { c.Quota = q })
			before := f.gen.Stats().Issued
			for _, target := range []string{"/v1/ids", "/v1/ids?count=5"} {
				r := f.post(target, "")
				if r.status != tc.status {
					t.Fatalf("POST %s: status %d, want %d", target, r.status, tc.status)
				}
				if e := errorOf(t, r); e.Code != tc.code {
					t.Errorf("code %q, want %q", e.Code, tc.code)
				}
				for k, want := range tc.headers {
					if got := r.header.Get(k); got != want {
						t.Errorf("%s: %q, want %q", k, got, want)
					}
				}
			}
			if got := f.gen.Stats().Issued; got != before {
				t.Errorf("refused requests issued %d IDs", got-before)
			}
			if len(q.done) != 0 {
				t.Errorf("Done called %d times on refused requests", len(q.done))
			}
		})
	}
}

// TestQuotaGivenBackOnRefusedMint: a mint the generator refuses (503) ends
// its grant with issued false.
func TestQuotaGivenBackOnRefusedMint(t *testing.T) {
	q := &fakeQuota{}
	f := newFixture(t, func(c *snowfence.Config) { c.Lease = nilLease{} }, func(c *Config) { c.Quota = q })
	for _, target := range []string{"/v1/ids", "/v1/ids?count=5"} {
		if r := f.post(target, ""); r.status != http.StatusServiceUnavailable {
			t.Fatalf("POST %s: %d, want 503", target, r.status)
		}
	}
	if got := q.done; len(got) != 2 || got[0] || got[1] {
		t.Errorf("done %v, want [false false]", got)
	}
}

// TestSealHonoursQuotaRefusal: POST /v1/public-ids asks the quota like every
// minting route, so a caller the perimeter refuses gets 403 from it too. A
// caller the perimeter refuses — not listed in the callers file under
// "default": "deny", a connection whose certificate the reloaded CA bundle no
// longer trusts, or one whose caller a callers-file reload removed — got 403
// from every minting route, yet POST /v1/public-ids never asked the quota (an
// adversarial review found it), so it still sealed any ID under any type, 1000
// per request at no cost. Sealing is the one capability that makes a public ID
// which Open accepts for an internal ID of the caller's choosing, so a refused
// caller kept the power to forge.
func TestSealHonoursQuotaRefusal(t *testing.T) {
	q := &fakeQuota{err: errors.New("perimeter: caller denied")}
	f := newFixture(t, nil, func(c *Config) { c.Quota = q })
	if r := f.post("/v1/uuids", ""); r.status != http.StatusForbidden {
		t.Fatalf("control: POST /v1/uuids by a refused caller: %d %s, want 403", r.status, r.body)
	}
	r := f.post("/v1/public-ids", `{"type":"user","ids":["1"]}`)
	if r.status != http.StatusForbidden {
		t.Errorf("POST /v1/public-ids by a caller the quota refuses: %d %s, want 403", r.status, r.body)
	}
}
