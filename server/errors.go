package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/snowfence/snowfence"
)

// Error codes: the "code" of every error body. They are stable; messages are
// for people and may change.
const (
	// CodeInvalidCount: the batch count is missing, not an integer, or
	// outside 1..1000 (400).
	CodeInvalidCount = "invalid_count"
	// CodeInvalidBody: the body is not a JSON object with only "count", has
	// trailing data, or is sent where none is taken (400).
	CodeInvalidBody = "invalid_body"
	// CodeInvalidQuery: an unknown or repeated query parameter, or a query
	// that cannot be parsed (400).
	CodeInvalidQuery = "invalid_query"
	// CodeConflictingCount: the count is given both in the query and in a
	// body (400).
	CodeConflictingCount = "conflicting_count"
	// CodeInvalidContentType: a body without a Content-Type, or with one
	// other than application/json (415).
	CodeInvalidContentType = "invalid_content_type"
	// CodeBodyTooLarge: the body is over Config.MaxBodyBytes (413).
	CodeBodyTooLarge = "body_too_large"
	// CodeInvalidID: the path's ID is not the canonical decimal form of an
	// ID: digits only, no sign, no leading zero, at most 2^63 − 1 (400).
	CodeInvalidID = "invalid_id"
	// CodeMethodNotAllowed: the path exists but not with this method; the
	// Allow header lists the methods it takes (405).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeNotFound: no such path (404), or a path served on the other
	// listener when health and metrics are apart (APIHandler,
	// AdminHandler).
	CodeNotFound = "not_found"
	// CodeRateLimited: the caller is over its quota of IDs per second
	// (Config.Quota); nothing was issued. Retry-After says when the same
	// request can succeed, and RateLimit-Policy and RateLimit describe the
	// quota (429).
	CodeRateLimited = "rate_limited"
	// CodeForbidden: the caller may take no IDs at all, e.g. it was removed
	// from the quota's callers after its connection was made, or may not
	// open public IDs (403).
	CodeForbidden = "forbidden"

	// Public IDs (POST /v1/public-ids, GET /v1/public-ids/{pid}).

	// CodeInvalidType: the seal body's type is missing or not a type
	// prefix (400).
	CodeInvalidType = "invalid_type"
	// CodeInvalidPublicID: the path's public ID is not the form of a
	// sealed public ID (400).
	CodeInvalidPublicID = "invalid_public_id"
	// CodePublicIDNotFound: the public ID has the form of a sealed one but
	// does not open under the server's keys: forged, altered, or sealed
	// under a key version that is retired or not in the keyset; which of
	// these is not told (404).
	CodePublicIDNotFound = "public_id_not_found"
	// CodePublicIDsDisabled: the server has no keyset, so it neither
	// seals nor opens public IDs (501).
	CodePublicIDsDisabled = "public_ids_disabled"

	// Refusals (503 with Retry-After). The generator issues nothing.

	// CodeFenced: the generator holds no lease, its renewal is overdue, or
	// its reserved mark is reached ("reason" says which).
	CodeFenced = "fenced"
	// CodeClockBackwards: the wall clock stepped back further than the
	// generator waits out.
	CodeClockBackwards = "clock_backwards"
	// CodeClockUnsynchronized: the clock policy is "require" (the default
	// with a shared store) and the clock is not synchronised well enough,
	// or it jumped forward and is not yet back in sync.
	CodeClockUnsynchronized = "clock_unsynchronized"
	// CodeLayoutExhausted: the clock is past the layout's last instant.
	CodeLayoutExhausted = "layout_exhausted"
	// CodeNoLayout: the layout in force cannot hold this generator's machine
	// or region number, or the clock reads before the epoch.
	CodeNoLayout = "no_layout"
	// CodeClosed: the generator is closed.
	CodeClosed = "closed"
	// CodeCanceled: the request's context ended while the generator waited.
	CodeCanceled = "canceled"
	// CodeShuttingDown: the server is draining (healthz and readyz only).
	CodeShuttingDown = "shutting_down"
	// CodeStarting: the service is not minting yet; it is claiming a
	// machine number, or waiting for one to free ("reason" is
	// ReasonStarting or ReasonNoFreeNumber). Every route that needs the
	// generator answers it while Config.Starting says so.
	CodeStarting = "starting"
	// CodeUnavailable: any other refusal.
	CodeUnavailable = "unavailable"
	// CodeInternal: a response could not be encoded (500; not expected).
	CodeInternal = "internal"
)

// apiError is an error response: its status and body.
type apiError struct {
	status  int
	code    string
	message string
	// reason is the generator's short cause for a refusal, or empty.
	reason string
}

// errorBody is the JSON form of every error response.
type errorBody struct {
	Error errorJSON `json:"error"`
	// Health is present on /healthz and /readyz.
	Health *healthJSON `json:"health,omitempty"`
}

type errorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
}

func badRequest(code, message string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, message: message}
}

// refusal maps an error from Next or AppendN to its response. Every error is
// a 503: the generator refused, or the request ended while it waited.
func refusal(err error) *apiError {
	e := &apiError{status: http.StatusServiceUnavailable, code: CodeUnavailable, message: err.Error()}
	var fe *snowfence.FencedError
	switch {
	case errors.As(err, &fe):
		e.code, e.reason = CodeFenced, fe.Reason
	case errors.Is(err, snowfence.ErrFenced):
		e.code = CodeFenced
	case errors.Is(err, snowfence.ErrClockBackwards):
		e.code = CodeClockBackwards
	case errors.Is(err, snowfence.ErrClockUnsynchronized):
		e.code = CodeClockUnsynchronized
	case errors.Is(err, snowfence.ErrLayoutExhausted):
		e.code = CodeLayoutExhausted
	case errors.Is(err, snowfence.ErrNoLayout):
		e.code = CodeNoLayout
	case errors.Is(err, snowfence.ErrClosed):
		e.code = CodeClosed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e.code, e.message = CodeCanceled, "the request ended while waiting for the next millisecond: "+err.Error()
	}
	return e
}

// writeError writes e as the JSON error body and returns its status.
func (s *Server) writeError(w http.ResponseWriter, e *apiError) int {
	return s.writeErrorHealth(w, e, nil)
}

// ErrorJSON is the body of an error response with code, message and reason
// (empty: none), in the shape every error of the server has, for a
// refusal written outside it (e.g. a connection shed before any request is
// read).
func ErrorJSON(code, message, reason string) []byte {
	b, err := json.Marshal(errorBody{Error: errorJSON{Code: code, Message: message, Reason: reason}})
	if err != nil { // cannot happen: only strings
		return []byte(`{"error":{"code":"` + CodeInternal + `","message":"cannot encode the error"}}`)
	}
	return b
}

func (s *Server) writeErrorHealth(w http.ResponseWriter, e *apiError, h *healthJSON) int {
	b, err := json.Marshal(errorBody{Error: errorJSON{Code: e.code, Message: e.message, Reason: e.reason}, Health: h})
	if err != nil { // cannot happen: only strings and numbers
		b = []byte(`{"error":{"code":"` + CodeInternal + `","message":"cannot encode the error"}}`)
	}
	hdr := w.Header()
	hdr["Content-Type"] = s.jsonType
	hdr["X-Content-Type-Options"] = s.nosniff
	if e.status == http.StatusServiceUnavailable {
		hdr["Retry-After"] = s.retryAfter
	}
	w.WriteHeader(e.status)
	w.Write(b)
	return e.status
}
