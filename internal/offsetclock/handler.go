package offsetclock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxBodyBytes bounds a POST body; larger is a bad request.
const maxBodyBytes = 1 << 10

// offsetJSON is the body of every 200 answer.
type offsetJSON struct {
	OffsetMs int64 `json:"offset_ms"`
}

// request is a POST body: offset_ms, step_ms, or slew_ms with over_ms.
type request struct {
	OffsetMs *int64 `json:"offset_ms"`
	StepMs   *int64 `json:"step_ms"`
	SlewMs   *int64 `json:"slew_ms"`
	OverMs   *int64 `json:"over_ms"`
}

// errorJSON is the body of every error answer, shaped like the ID server's.
type errorJSON struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Handler returns the HTTP control of the offset, for fault-injection tests
// only:
//
//	GET                      → 200 {"offset_ms":N}
//	POST {"offset_ms":N}     → sets the offset;  200 {"offset_ms":N}
//	POST {"step_ms":N}       → adds N;           200 {"offset_ms":<new>}
//	POST {"slew_ms":N,"over_ms":M}
//	                         → Slew(N ms, M ms); 200 {"offset_ms":<now>}
//
// GET reports the offset now, which a slew keeps changing. A POST body must
// be one JSON object of at most 1 KiB holding exactly one of offset_ms,
// step_ms and slew_ms (with over_ms, and |slew_ms| < over_ms) as integers
// within ±MaxOffset, and nothing after it;
// anything else is a 400 {"error":{"code":"bad_request","message":...}} and
// leaves the offset as it was. Other methods are a 405 with an Allow header.
func (c *Clock) Handler() http.Handler {
	return http.HandlerFunc(c.serveHTTP)
}

func (c *Clock) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, offsetJSON{c.Offset().Milliseconds()})
	case http.MethodPost:
		req, err := decodeRequest(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		var ms int64
		switch {
		case req.OffsetMs != nil:
			ms = c.setMs(func(int64) int64 { return *req.OffsetMs })
		case req.StepMs != nil:
			ms = c.setMs(func(cur int64) int64 { return clampMs(cur + *req.StepMs) })
		default: // checked by decodeRequest: |slew_ms| < over_ms
			c.Slew(time.Duration(*req.SlewMs)*time.Millisecond, time.Duration(*req.OverMs)*time.Millisecond)
			ms = c.Offset().Milliseconds()
		}
		writeJSON(w, http.StatusOK, offsetJSON{ms})
	default:
		w.Header().Set("Allow", "GET, POST")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed; use GET or POST")
	}
}

// decodeRequest parses and checks a POST body.
func decodeRequest(body io.Reader) (request, error) {
	var req request
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return req, fmt.Errorf("body over %d bytes", maxBodyBytes)
		}
		return req, fmt.Errorf(`body must be {"offset_ms":N}, {"step_ms":N} or {"slew_ms":N,"over_ms":M}: %v`, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, errors.New("body has data after the JSON object")
	}
	var v *int64
	n := 0
	for _, f := range []*int64{req.OffsetMs, req.StepMs, req.SlewMs} {
		if f != nil {
			n, v = n+1, f
		}
	}
	switch {
	case n > 1:
		return req, errors.New(`give one of "offset_ms", "step_ms" and "slew_ms", not more`)
	case n == 0:
		return req, errors.New(`give "offset_ms" (set), "step_ms" (add) or "slew_ms" with "over_ms" (slew) as an integer`)
	case (req.SlewMs != nil) != (req.OverMs != nil):
		return req, errors.New(`"slew_ms" and "over_ms" go together`)
	case req.SlewMs != nil && (*req.OverMs <= 0 || *req.OverMs > maxOffsetMs || max(*req.SlewMs, -*req.SlewMs) >= *req.OverMs):
		return req, fmt.Errorf("a slew of %d ms over %d ms: %w", *req.SlewMs, *req.OverMs, ErrSlewTooFast)
	}
	if *v < -maxOffsetMs || *v > maxOffsetMs {
		return req, fmt.Errorf("%d ms is beyond the largest offset, ±%d ms (%s)", *v, maxOffsetMs, time.Duration(MaxOffset))
	}
	return req, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // not expected: the bodies are plain structs
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	var e errorJSON
	e.Error.Code, e.Error.Message = code, message
	writeJSON(w, status, e)
}
