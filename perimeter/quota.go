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
	// The clock is read before the bucket's lock, so a reading that stalls
	// holds up no other request of the caller; at then moves it up to the
	// bucket's latest time if another request got there first.
	reading := p.now()
	b := c.bucket
	b.mu.Lock()
	now := b.at(reading)
	if burst := b.lim.Burst(); n > burst { // not with bursts ≥ the largest batch, but a Quota must answer
		b.mu.Unlock()
		c.c.refusedRequest.Inc()
		return nil, fmt.Errorf("%w: %d IDs is more than %q's burst of %d can ever allow", ErrCallerDenied, n, id, burst)
	}
	// A refusal reads the bucket and changes nothing: a refused request
	// costs nothing, and the limiter's last event stays that of its last
	// grant (see grant.Done).
	if tokens := b.lim.TokensAt(now); tokens < float64(n) {
		limit, burst := b.lim.Limit(), b.lim.Burst()
		b.mu.Unlock()
		c.c.throttled.Inc()
		return nil, overQuota(limit, burst, tokens, n, t.holders)
	}
	res := b.lim.ReserveN(now, n) // immediate: the bucket held n at now, under mu
	limit := b.lim.Limit()
	b.mu.Unlock()
	g := p.grants.Get().(*grant)
	g.res, g.at, g.limit, g.c, g.n, g.pool = res, now, limit, c, n, &p.grants
	return g, nil
}

// maxWaitSecs is the longest wait a refusal states, in seconds: about
// 292 years, the longest time.Duration.
const maxWaitSecs = float64(math.MaxInt64 / int64(time.Second))

// overQuota describes a refusal of n IDs by a bucket of rate lim and burst
// holding tokens, the share of a quota divided among holders.
func overQuota(lim rate.Limit, burst int, tokens float64, n, holders int) *server.QuotaError {
	limit := float64(lim)
	// As rate.Reservation.DelayFrom would say for a reservation of n, in
	// float seconds first: a rate below about 1e-7 IDs/s makes the wait
	// longer than a time.Duration holds, which overflowed to Retry-After: 1.
	waitSecs := min((float64(n)-tokens)/limit, maxWaitSecs)
	wait := time.Duration(waitSecs * float64(time.Second))
	if waitSecs >= maxWaitSecs {
		wait = math.MaxInt64
	}
	tokens = max(math.Floor(tokens), 0)
	secs := int64(math.Ceil(waitSecs))
	window := int64(math.Ceil(min(float64(burst)/limit, maxWaitSecs)))
	msg := fmt.Sprintf("asked for %d IDs with %d available; the quota is %g IDs per second in bursts of up to %d", n, int64(tokens), limit, burst)
	if holders > 1 {
		msg = fmt.Sprintf("asked for %d IDs with %d available; this holder's share of the caller's quota is %g IDs per second in bursts of up to %d (the quota divided among the %d holders of the fleet)", n, int64(tokens), limit, burst, holders)
	}
	return &server.QuotaError{
		RetryAfter: wait,
		Policy:     `"` + policyName + `";q=` + strconv.Itoa(burst) + ";w=" + strconv.FormatInt(max(window, 1), 10),
		Limit:      `"` + policyName + `";r=` + strconv.FormatInt(int64(tokens), 10) + ";t=" + strconv.FormatInt(max(secs, 1), 10),
		Message:    msg,
	}
}

// grant is a granted request's reservation, pooled in Perimeter.grants.
type grant struct {
	res   *rate.Reservation
	at    time.Time  // the instant the reservation was made at
	limit rate.Limit // the bucket's rate then
	c     *caller
	n     int
	pool  *sync.Pool
}

// Done implements server.QuotaGrant. A mint that failed gives its n IDs
// back with CancelAt at the reservation's own instant: CancelAt restores
// nothing for any later instant. In golang.org/x/time/rate v0.16.0 that
// moves the limiter's last update back to the instant, so the time since
// would be credited again, but CancelAt first deducts from what it
// restores the tokens that time is worth (the rate times the time from the
// instant to the limiter's last event). The two cancel out while the last
// event is the limiter's last update, which Take and bucket.setPolicy keep
// true (refusals only read the bucket; a reload reserves nothing at its
// time); otherwise, and when other grants since have been
// worth more than n, it restores less, never more. A grant whose bucket's
// rate changed since (a reload) gives nothing back, since the deduction
// would be at the old rate and the credit at the new.
func (g *grant) Done(issued bool) {
	if issued {
		g.c.c.issued.Add(float64(g.n))
	} else {
		b := g.c.bucket
		b.mu.Lock()
		if b.lim.Limit() == g.limit {
			g.res.CancelAt(g.at)
		}
		b.mu.Unlock()
	}
	pool := g.pool
	*g = grant{}
	pool.Put(g)
}

// noGrant is the grant of a perimeter without quotas.
type noGrant struct{}

func (noGrant) Done(bool) {}
