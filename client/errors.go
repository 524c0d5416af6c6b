package client

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/snowfence/snowfence"
)

// Sentinel errors. Match them with errors.Is; the errors the client returns
// wrap them with the details.
var (
	// ErrInvalidConfig reports a Config that New cannot use. It is
	// snowfence.ErrInvalidConfig, so either matches.
	ErrInvalidConfig = snowfence.ErrInvalidConfig
	// ErrClosed reports a call on a closed Client, or a call that was
	// waiting when Close was called.
	ErrClosed = errors.New("snowfence client: closed")
	// ErrUnavailable reports that a refill gave up: Config.MaxAttempts
	// requests, across every endpoint, brought no IDs. It comes wrapped in
	// an *UnavailableError that holds the last failure.
	ErrUnavailable = errors.New("snowfence client: no endpoint issued IDs")
	// ErrRefused reports a 503 (or another 5xx): the server is up but not
	// issuing (fenced, clock trouble, draining). Retried.
	ErrRefused = errors.New("snowfence client: the server refused to issue")
	// ErrRateLimited reports a 429: this caller is over its quota. Retried
	// after Retry-After, on the same endpoint.
	ErrRateLimited = errors.New("snowfence client: over quota")
	// ErrRejected reports any other 4xx: the server will not take the
	// request as sent (a wrong URL, a missing permission). Not retried.
	ErrRejected = errors.New("snowfence client: request rejected")
	// ErrBadResponse reports a 200 whose body is not exactly a batch of the
	// count asked for, in strictly increasing order, or (with
	// Config.Schedule) one that repeats IDs received before: it yields no
	// IDs, and counts as a failure of the endpoint.
	ErrBadResponse = errors.New("snowfence client: malformed response")
)

// ServerError is a non-200 answer from an endpoint. It matches ErrRefused,
// ErrRateLimited or ErrRejected by its status.
type ServerError struct {
	// Endpoint is the base URL that answered.
	Endpoint string
	// Status is the HTTP status.
	Status int
	// Code, Message and Reason are the error body's fields (empty when the
	// body was not the server's JSON error, e.g. from a proxy).
	Code, Message, Reason string
	// RetryAfter is the Retry-After header as a duration, zero without one.
	RetryAfter time.Duration
}

func (e *ServerError) Error() string {
	s := fmt.Sprintf("snowfence client: %s answered %d %s", e.Endpoint, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		s += " (" + e.Code
		if e.Reason != "" {
			s += ", " + e.Reason
		}
		s += ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the sentinel of the status: ErrRateLimited for 429,
// ErrRejected for another 4xx, ErrRefused otherwise.
func (e *ServerError) Unwrap() error {
	switch {
	case e.Status == http.StatusTooManyRequests:
		return ErrRateLimited
	case e.Status >= 400 && e.Status < 500:
		return ErrRejected
	}
	return ErrRefused
}

// retryable reports whether another attempt may succeed: not for a 4xx other
// than 429 (and 408, a timeout).
func (e *ServerError) retryable() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status < 400
}

// UnavailableError is returned when a refill gives up. It matches
// ErrUnavailable and, through Last, the last failure (errors.As finds a
// *ServerError there).
type UnavailableError struct {
	// Attempts is how many requests the refill sent.
	Attempts int
	// Last is the last attempt's failure.
	Last error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("snowfence client: no endpoint issued IDs after %d attempts; check that a server in Config.Endpoints is reachable and issuing (GET /healthz): last failure: %v", e.Attempts, e.Last)
}

// Unwrap returns ErrUnavailable and the last failure.
func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Last} }

// badResponse reports a malformed 200.
func badResponse(endpoint, format string, args ...any) error {
	return fmt.Errorf("%w from %s: %s", ErrBadResponse, endpoint, fmt.Sprintf(format, args...))
}
