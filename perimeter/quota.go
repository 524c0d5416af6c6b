package perimeter

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/snowfence/snowfence/server"
)

var _ server.Quota = (*Perimeter)(nil)

// policyName names the perimeter's one quota policy in the RateLimit
// fields.
const policyName = "ids"

// Quota returns the perimeter as the server's quota (server.Config.Quota),
// or nil when there is neither a callers file nor mutual TLS. With mutual
// TLS but no callers file it sets no limits, but still refuses requests on
// a connection whose certificate is no longer trusted (see Take).
func (p *Perimeter) Quota() server.Quota {
	if p.cfg.CallersFile == "" && p.base == nil {
		return nil
	}
	return p
}

// Take implements server.Quota: it takes n IDs from the bucket of r's
// caller. The caller is the identity of the connection's verified
// certificate (with TLS) or the one anonymous caller "" (without); an
// identity the callers file does not allow is refused with ErrCallerDenied
// (a 403). With mutual TLS, a request on a connection whose certificate
// chain no longer verifies against the client CAs in force (the bundle was
// reloaded without its CA), or which has expired since the handshake
// (checked against the wall clock, as crypto/tls does), is refused with
// ErrUntrusted (a 403); the chain is verified again once per connection
// after each reload of the bundle, and its validity compared on every
// request. Both are counted as snowfence_caller_refused_total{at="request"}.
// A caller whose bucket holds fewer than n IDs is refused with a
// *server.QuotaError and its bucket is left as it was: a refused request
// costs nothing, so a caller that retries too early only delays itself by
// the retry, never by the refusal. A granted request whose mint fails gives
// its n back (Done(false)).
//
// # RateLimit fields
//
// A refusal carries the fields of the IETF httpapi working group's draft
// "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers,
// revision 11's syntax), for a bucket of rate R IDs/s and burst B after a
// request for n found T IDs:
//
//	RateLimit-Policy: "ids";q=B;w=⌈B/R⌉
//	RateLimit: "ids";r=⌊T⌋;t=⌈(n−T)/R⌉
//	Retry-After: ⌈(n−T)/R⌉ (at least 1)
//
// The draft's quota is q units per window of w seconds; a token bucket is
// not a window, and the nearest statement of one is its burst over the time
// the bucket takes to refill from empty: a caller that takes q IDs per w
// seconds, evenly or all at once, is never refused. The quota unit is IDs,
// not the draft's default "requests" (a batch of 1,000 takes 1,000); the
// draft's registry has no unit for that, so no "qu" is sent and the policy
// is named "ids" to say it. r is what the bucket holds now and t when the
// refused request would fit, equal to Retry-After, which the draft asks be
// no earlier than t. The fields are sent on 429s only: computing them on
// every 200 would cost the mint path formatting and allocation.
func (p *Perimeter) Take(r *http.Request, n int) (server.QuotaGrant, error) {
	t := p.callers.Load()
	cc := p.connOf(r, t)
	if err := cc.trusted(time.Now()); err != nil {
		switch {
		case cc.c != nil:
			cc.c.c.refusedRequest.Inc()
		case t != nil:
			t.denied.refusedRequest.Inc()
		default:
			p.untrustedRefused.Inc()
		}
		return nil, err
	}
	if t == nil {
		return noGrant{}, nil
	}
	c, id := cc.c, cc.id
	if c == nil {
		t.denied.refusedRequest.Inc()
		return nil, fmt.Errorf("%w: %q may not take IDs (no identity, or not listed in the callers file and the default is deny)", ErrCallerDenied, id)
	}
	now := p.now()
	res := c.lim.ReserveN(now, n)
	if !res.OK() { // n > burst: not with bursts ≥ the largest batch, but a Quota must answer
		c.c.refusedRequest.Inc()
		return nil, fmt.Errorf("%w: %d IDs is more than %q's burst of %d can ever allow", ErrCallerDenied, n, id, c.lim.Burst())
	}
	if d := res.DelayFrom(now); d > 0 {
		// Give the tokens back at the instant they were taken: CancelAt
		// restores nothing for a time after the reservation's.
		res.CancelAt(now)
		c.c.throttled.Inc()
		return nil, p.overQuota(c.lim, now, n, d)
	}
	g := p.grants.Get().(*grant)
	g.res, g.at, g.c, g.n, g.pool = res, now, c, n, &p.grants
	return g, nil
}

// overQuota describes a refusal of n IDs that would fit after wait.
func (p *Perimeter) overQuota(lim *rate.Limiter, now time.Time, n int, wait time.Duration) *server.QuotaError {
	limit, burst := float64(lim.Limit()), lim.Burst()
	tokens := max(math.Floor(lim.TokensAt(now)), 0)
	secs := int64(math.Ceil(wait.Seconds()))
	window := int64(math.Ceil(float64(burst) / limit))
	return &server.QuotaError{
		RetryAfter: wait,
		Policy:     `"` + policyName + `";q=` + strconv.Itoa(burst) + ";w=" + strconv.FormatInt(max(window, 1), 10),
		Limit:      `"` + policyName + `";r=` + strconv.FormatInt(int64(tokens), 10) + ";t=" + strconv.FormatInt(max(secs, 1), 10),
		Message:    fmt.Sprintf("asked for %d IDs with %d available; the quota is %g IDs per second in bursts of up to %d", n, int64(tokens), limit, burst),
	}
}

// grant is a granted request's reservation, pooled in Perimeter.grants.
type grant struct {
	res  *rate.Reservation
	at   time.Time
	c    *caller
	n    int
	pool *sync.Pool
}

// Done implements server.QuotaGrant.
func (g *grant) Done(issued bool) {
	if issued {
		g.c.c.issued.Add(float64(g.n))
	} else {
		g.res.CancelAt(g.at) // at the reservation's instant: see Take
	}
	pool := g.pool
	*g = grant{}
	pool.Put(g)
}

// noGrant is the grant of a perimeter without quotas.
type noGrant struct{}

func (noGrant) Done(bool) {}
