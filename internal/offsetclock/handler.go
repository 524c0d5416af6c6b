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

// request is a POST body: exactly one of the two fields.
type request struct {
	OffsetMs *int64 `json:"offset_ms"`
	StepMs   *int64 `json:"step_ms"`
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
//
// A POST body must be one JSON object of at most 1 KiB holding exactly one
// of the two fields as an integer within ±MaxOffset, and nothing after it;
// anything else is a 400 {"error":{"code":"bad_request","message":...}} and
// leaves the offset as it was. Other methods are a 405 with an Allow header.
func (c *Clock) Handler() http.Handler {
	return http.HandlerFunc(c.serveHTTP)
}

func (c *Clock) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, offsetJSON{c.st.Load().offMs})
	case http.MethodPost:
		req, err := decodeRequest(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", err.Error())
			return
		}
		var ms int64
		if req.OffsetMs != nil {
			ms = c.setMs(func(int64) int64 { return *req.OffsetMs })
		} else {
			ms = c.setMs(func(cur int64) int64 { return clampMs(cur + *req.StepMs) })
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
		return req, fmt.Errorf(`body must be {"offset_ms":N} or {"step_ms":N}: %v`, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, errors.New("body has data after the JSON object")
	}
	var v *int64
	switch {
	case req.OffsetMs != nil && req.StepMs != nil:
		return req, errors.New(`give one of "offset_ms" and "step_ms", not both`)
	case req.OffsetMs != nil:
		v = req.OffsetMs
	case req.StepMs != nil:
		v = req.StepMs
	default:
		return req, errors.New(`give "offset_ms" (set) or "step_ms" (add) as an integer`)
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
