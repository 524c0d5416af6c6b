package server

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Quota limits how many IDs each caller may take. When Config.Quota is set,
// the server consults it once per mint request, after the count is known
// and before the generator is called; a refused request issues nothing.
// Package perimeter implements it per caller identity.
type Quota interface {
	// Take asks for n IDs (1 ≤ n ≤ snowfence.MaxBatch) for the caller of r.
	// When the caller may have them now it returns a grant and nil, and
	// the server calls the grant's Done exactly once when the mint ends.
	// Otherwise it returns a nil grant and an error: a *QuotaError when the
	// caller is over its quota (429, CodeRateLimited), any other error when
	// the caller may take no IDs at all (403, CodeForbidden).
	//
	// Take is called on every mint and must be safe for concurrent use; it
	// should not allocate more than it must.
	Take(r *http.Request, n int) (QuotaGrant, error)
}

// QuotaGrant is one allowed request's claim on its caller's quota.
type QuotaGrant interface {
	// Done ends the grant. issued reports whether the IDs were issued;
	// false (the generator refused, a 503) gives the allowance back, so a
	// request that issued nothing costs its caller nothing.
	Done(issued bool)
}

// QuotaError is a Quota's answer to a caller over its quota: a 429 with
// Retry-After and, when set, the RateLimit-Policy and RateLimit fields of
// the IETF httpapi working group's RateLimit header fields draft.
type QuotaError struct {
	// RetryAfter is how long until the same request could be allowed.
	// Retry-After carries it in whole seconds, rounded up, at least 1.
	RetryAfter time.Duration
	// Policy and Limit are the RateLimit-Policy and RateLimit field
	// values; an empty one is not sent.
	Policy, Limit string
	// Message says why, for the error body's message.
	Message string
}

func (e *QuotaError) Error() string {
	if e.Message != "" {
		return "server: rate limited: " + e.Message
	}
	return "server: rate limited"
}

// take consults the quota for n IDs on behalf of r. Allowed, it returns the
// grant and status 0; refused, it writes the refusal and returns nil and
// its status.
func (s *Server) take(w http.ResponseWriter, r *http.Request, n int) (QuotaGrant, int) {
	g, err := s.quota.Take(r, n)
	if err == nil {
		return g, 0
	}
	var qe *QuotaError
	if !errors.As(err, &qe) {
		return nil, s.writeError(w, &apiError{status: http.StatusForbidden, code: CodeForbidden, message: err.Error()})
	}
	h := w.Header()
	h.Set("Retry-After", strconv.FormatInt(retryAfterSeconds(qe.RetryAfter), 10))
	if qe.Policy != "" {
		h.Set("RateLimit-Policy", qe.Policy)
	}
	if qe.Limit != "" {
		h.Set("RateLimit", qe.Limit)
	}
	msg := qe.Message
	if msg == "" {
		msg = "over the caller's quota of IDs"
	}
	return nil, s.writeError(w, &apiError{status: http.StatusTooManyRequests, code: CodeRateLimited, message: msg})
}

// retryAfterSeconds is d in whole seconds, rounded up, at least 1: a
// client that waits that long is not refused again for the same reason.
func retryAfterSeconds(d time.Duration) int64 {
	s := int64(d / time.Second) // rounded up below, without d + 1 s overflowing
	if d%time.Second != 0 {
		s++
	}
	return max(s, 1)
}
