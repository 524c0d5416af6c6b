package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
)

// FuzzCountBody checks the hand-written batch body parser against
// encoding/json: whatever it accepts, encoding/json reads the same count
// from; whatever is exactly {"count": <1..1000>} as JSON tokens, it accepts;
// whatever is not JSON, it refuses with a 400. emptyObject, which lets POST
// /v1/ids take {} as no body, holds exactly for the empty object, and
// noFields exactly for it and null.
func FuzzCountBody(f *testing.F) {
	for _, s := range []string{
		`{"count":1}`, `{"count": 1000}`, ` {"count":7} `, `{}`, `{"count":0}`, `{"count":1001}`,
		`{"count":-1}`, `{"count":"ten"}`, `{"count":1.5}`, `{"count":null}`, `{"count":5,"x":1}`,
		`{"count":5}x`, `{"count":5,"count":6}`, `{"\u0063ount":3}`, `{"Count":3}`, `[1]`, ``, `{"count":05}`,
		`{"count":1e2}`, "{\"count\":\t3\n}", `{"count":3,}`, `{"co\"unt":3}`, `{"count":3}` + "\x00",
		` { } `, `{}{}`, `{} x`, `[]`, `null`, "{\n}\x00", ` null `, `nul`, `null null`, `nullx`, `"null"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok, e := parseCountBody(b)
		if e != nil {
			if e.status != http.StatusBadRequest || (e.code != CodeInvalidBody && e.code != CodeInvalidCount) || e.message == "" {
				t.Fatalf("parseCountBody(%q): error %d %q %q", b, e.status, e.code, e.message)
			}
		} else {
			if !json.Valid(b) {
				t.Fatalf("parseCountBody(%q) accepted invalid JSON", b)
			}
			var v struct {
				Count *int `json:"count"`
			}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("parseCountBody(%q) = %d, %v; encoding/json: %v", b, n, ok, err)
			}
			if _, err := dec.Token(); err != io.EOF {
				t.Fatalf("parseCountBody(%q) accepted trailing data", b)
			}
			switch {
			case ok && (n < 1 || n > snowfence.MaxBatch):
				t.Fatalf("parseCountBody(%q) = %d, out of range", b, n)
			case ok && (v.Count == nil || *v.Count != n):
				t.Fatalf("parseCountBody(%q) = %d; encoding/json reads %v", b, n, v.Count)
			case !ok && v.Count != nil:
				t.Fatalf("parseCountBody(%q) found no count; encoding/json reads %d", b, *v.Count)
			}
		}
		if want, exact := exactCountObject(b); exact && (e != nil || !ok || n != want) {
			t.Fatalf("parseCountBody(%q) = %d, %v, %v; want %d", b, n, ok, e, want)
		}
		if got, want := emptyObject(b), isEmptyJSONObject(b); got != want {
			t.Fatalf("emptyObject(%q) = %v; encoding/json says %v", b, got, want)
		}
		if got, want := noFields(b), isEmptyJSONObject(b) || isJSONNull(b); got != want {
			t.Fatalf("noFields(%q) = %v; encoding/json says %v", b, got, want)
		}
	})
}

// isEmptyJSONObject reports whether b is valid JSON whose tokens are { and
// } and nothing more: the empty object, with any white space.
func isEmptyJSONObject(b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for _, want := range []json.Token{json.Delim('{'), json.Delim('}')} {
		if tok, err := dec.Token(); err != nil || tok != want {
			return false
		}
	}
	_, err := dec.Token()
	return err == io.EOF
}

// exactCountObject reports whether b is, token by token, {"count": N} with
// N an integer literal from 1 to MaxBatch and nothing after it.
func exactCountObject(b []byte) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var toks []json.Token
	for range 5 {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, false
		}
		toks = append(toks, tok)
	}
	if len(toks) != 4 || toks[0] != json.Delim('{') || toks[1] != "count" || toks[3] != json.Delim('}') {
		return 0, false
	}
	num, isNum := toks[2].(json.Number)
	if !isNum || strings.ContainsAny(string(num), ".eE") {
		return 0, false
	}
	v, err := strconv.Atoi(string(num))
	if err != nil || v < 1 || v > snowfence.MaxBatch {
		return 0, false
	}
	// A repeated name is refused, and the decoder's tokens would show it:
	// only one name was read.
	return v, true
}

// FuzzDecodePath checks the decode route with arbitrary {id} text: it never
// panics, answers 200 exactly for canonical IDs and UUIDv8 forms of IDs —
// those later than the clock allows among them, with an in_future warning
// (TestDecodeFutureID) — and 400 or 404 otherwise.
func FuzzDecodePath(f *testing.F) {
	for _, s := range []string{example, "0", "abc", "-5", "+5", "01", "9223372036854775807",
		"9223372036854775808", "99999999999999999999", "", "1/2", " 1", "1 ", "١٢٣", "%",
		exampleUUID, strings.ToUpper(exampleUUID), "0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f"} {
		f.Add(s)
	}
	sched := snowfence.DefaultSchedule()
	fx := newFixture(f, nil, nil)
	f.Fuzz(func(t *testing.T, s string) {
		path := "/v1/ids/" + s + "/decode"
		hr := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}, Header: http.Header{}, Body: http.NoBody}
		w := httptest.NewRecorder()
		fx.h.ServeHTTP(w, hr)
		// {id} is one non-empty path segment.
		routed := s != "" && !strings.Contains(s, "/")
		id, perr := snowfence.ParseID(s)
		var u snowfence.UUID
		if perr != nil {
			var err error
			if u, err = snowfence.ParseUUID(s); err == nil {
				if id, err = sched.FromUUID(u); err == nil {
					perr = nil
				}
			}
		}
		switch {
		case !routed:
			if w.Code != http.StatusNotFound {
				t.Fatalf("%q: status %d, want 404 for an unrouted path", path, w.Code)
			}
		case perr != nil:
			if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), CodeInvalidID) {
				t.Fatalf("%q: status %d body %s, want 400 invalid_id", s, w.Code, w.Body)
			}
		case w.Code != http.StatusOK:
			t.Fatalf("%q: status %d body %s for a canonical ID, want 200", s, w.Code, w.Body)
		default:
			var got struct {
				ID   snowfence.ID   `json:"id"`
				UUID snowfence.UUID `json:"uuid"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.ID != id || got.UUID != u || (u.IsZero() && got.ID.String() != s) {
				t.Fatalf("%q: body %s does not carry the ID (%v)", s, w.Body, err)
			}
		}
	})
}

// isJSONNull reports whether b is valid JSON whose one token is null, with
// any white space.
func isJSONNull(b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil || tok != nil {
		return false
	}
	_, err = dec.Token()
	return err == io.EOF
}

// FuzzPublicIDBodies checks the hand-written parsers of the seal and
// mint-and-seal bodies against encoding/json: whatever they accept,
// encoding/json reads as an object of exactly their members with the same
// values (each ID a string in canonical decimal, the count an integer), and
// neither panics on anything.
func FuzzPublicIDBodies(f *testing.F) {
	for _, s := range []string{
		`{"type":"order","ids":["97301141913751557"]}`, `{"type":"order","count":3}`, `{"ids":[],"type":"a"}`,
		`{"type":"order","type":"x","count":1}`, `{"type":"order","count":1} x`, `{"type":"ord\u0065r","count":2}`,
		`{"count":1e2,"type":"order"}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if prefix, ids, e := parseSealBody(b); e == nil {
			var v struct {
				Type string   `json:"type"`
				IDs  []string `json:"ids"`
			}
			d := json.NewDecoder(bytes.NewReader(b))
			d.DisallowUnknownFields()
			if err := d.Decode(&v); err != nil || v.Type != prefix || len(v.IDs) != len(ids) {
				t.Fatalf("parseSealBody accepted %q as %q %v; encoding/json: %+v, %v", b, prefix, ids, v, err)
			}
			for i, s := range v.IDs {
				if s != strconv.FormatUint(uint64(ids[i]), 10) {
					t.Fatalf("parseSealBody read ID %d of %q as %d", i, b, ids[i])
				}
			}
		}
		if prefix, n, e := parseMintSealBody(b); e == nil {
			var v struct {
				Type  string `json:"type"`
				Count int    `json:"count"`
			}
			d := json.NewDecoder(bytes.NewReader(b))
			d.DisallowUnknownFields()
			if err := d.Decode(&v); err != nil || v.Type != prefix || v.Count != n {
				t.Fatalf("parseMintSealBody accepted %q as %q %d; encoding/json: %+v, %v", b, prefix, n, v, err)
			}
		}
	})
}
