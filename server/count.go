package server

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/snowfence/snowfence"
)

// countRange is the message part that states the allowed counts,
// 1..snowfence.MaxBatch (a test keeps the two in step).
const countRange = "an integer from 1 to 1000"

// countFromQuery reads the optional ?count=N of a mint request. ok is false
// when the query has no count; any other parameter is refused.
func countFromQuery(rawQuery string) (n int, ok bool, e *apiError) {
	if rawQuery == "" {
		return 0, false, nil
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return 0, false, badRequest(CodeInvalidQuery, "the query string cannot be parsed: "+err.Error())
	}
	for k, vs := range q {
		if k != "count" {
			return 0, false, badRequest(CodeInvalidQuery, fmt.Sprintf("unknown query parameter %q; the only one is count", k))
		}
		if len(vs) != 1 {
			return 0, false, badRequest(CodeInvalidQuery, "count is given more than once")
		}
	}
	vs, ok := q["count"]
	if !ok {
		return 0, false, nil
	}
	n, e = parseCountText(vs[0])
	return n, true, e
}

// parseCountText reads a count from a query value: decimal digits with an
// optional minus sign (so that -1 is reported as out of range rather than as
// text).
func parseCountText(s string) (int, *apiError) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, badRequest(CodeInvalidCount, fmt.Sprintf("count %s is not a number; give %s", quoteShort(s), countRange))
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 || v > snowfence.MaxBatch {
		return 0, badRequest(CodeInvalidCount, fmt.Sprintf("count %s is out of range; give %s", quoteShort(s), countRange))
	}
	return int(v), nil
}

// parseCountBody reads a batch body: one JSON object whose only member is
// "count", an integer literal from 1 to MaxBatch, with nothing after it but
// white space. ok is false for an object without "count" ({}).
//
// It is written by hand for strictness: decoding into a struct with
// encoding/json would quietly take bodies that do not say what they seem
// to. encoding/json matches field names without regard to case and keeps
// the last of repeated names, so {"COUNT":3} and {"count":1,"count":1000}
// would both mint, the second 1000 IDs. Here the name must be exactly
// "count" once its escapes are decoded ("\u0063ount" is count, "Count" is
// an unknown field), a repeated count is refused, and so are unknown
// fields, a count that is not an integer literal (a string, null, a
// fraction, an exponent; a leading zero is malformed JSON) and data after
// the object. Each refusal is a 400 whose message says which rule the body
// broke: invalid_count when the count's value is wrong, invalid_body for
// everything else. What it accepts, encoding/json reads the same count
// from (FuzzCountBody checks this).
func parseCountBody(b []byte) (n int, ok bool, e *apiError) {
	p := jsonScanner{b: b}
	p.space()
	if !p.eat('{') {
		return 0, false, badRequest(CodeInvalidBody, `the body must be a JSON object such as {"count": 10}`)
	}
	p.space()
	if !p.eat('}') {
		for {
			key, raw, kerr := p.str()
			if kerr != "" {
				return 0, false, badRequest(CodeInvalidBody, "malformed JSON: "+kerr)
			}
			if raw {
				// An escaped name: compare its decoded form.
				var k string
				if json.Unmarshal(key, &k) == nil && k == "count" {
					key = []byte("count")
				}
			} else {
				key = key[1 : len(key)-1]
			}
			if string(key) != "count" {
				return 0, false, badRequest(CodeInvalidBody, fmt.Sprintf("unknown field %s; the body takes only count", quoteShort(string(key))))
			}
			if ok {
				return 0, false, badRequest(CodeInvalidBody, "count is given more than once")
			}
			p.space()
			if !p.eat(':') {
				return 0, false, badRequest(CodeInvalidBody, "malformed JSON: expected ':' after the field name")
			}
			p.space()
			if n, e = p.count(); e != nil {
				return 0, false, e
			}
			ok = true
			p.space()
			if p.eat('}') {
				break
			}
			if !p.eat(',') {
				return 0, false, badRequest(CodeInvalidBody, "malformed JSON: expected ',' or '}' after the count")
			}
			p.space()
		}
	}
	p.space()
	if p.i != len(p.b) {
		return 0, false, badRequest(CodeInvalidBody, "unexpected data after the JSON object")
	}
	return n, ok, nil
}

// emptyObject reports whether b is the empty JSON object {}, with white
// space allowed around and inside it as JSON allows. It allocates nothing.
func emptyObject(b []byte) bool {
	_, ok, e := parseCountBody(b)
	return e == nil && !ok
}

// noFields reports whether b is a body without fields: the empty object {}
// or the JSON literal null, with white space around it. Either is the same
// request as no body: null is what a client generated from api/openapi.json
// sends for a body it was given none for (oapi-codegen marshals a nil map),
// and many HTTP clients send {} on every POST. It allocates nothing.
func noFields(b []byte) bool {
	p := jsonScanner{b: b}
	p.space()
	if rest := p.b[p.i:]; len(rest) >= 4 && string(rest[:4]) == "null" {
		p.i += 4
		p.space()
		return p.i == len(p.b)
	}
	return emptyObject(b)
}

// parseMintBody reads the body of a mint request that has one: no fields
// (noFields), or for a batch {"count":N} (parseCountBody). ok is false for a
// body without fields.
func parseMintBody(b []byte) (n int, ok bool, e *apiError) {
	if noFields(b) {
		return 0, false, nil
	}
	return parseCountBody(b)
}

// jsonScanner walks a byte slice of JSON.
type jsonScanner struct {
	b []byte
	i int
}

func (p *jsonScanner) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonScanner) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str scans a JSON string and returns it with its quotes, whether it holds
// escapes, and a description of what is wrong, if anything.
func (p *jsonScanner) str() (tok []byte, escaped bool, bad string) {
	start := p.i
	if !p.eat('"') {
		return nil, false, "expected a field name in double quotes"
	}
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start:p.i], escaped, ""
		case c < 0x20:
			return nil, false, "control character in a string"
		case c == '\\':
			escaped = true
			if p.i+1 >= len(p.b) {
				return nil, false, "unterminated string"
			}
			switch p.b[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.b) {
					return nil, false, "unterminated string"
				}
				for _, h := range p.b[p.i+2 : p.i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return nil, false, `invalid \u escape`
					}
				}
				p.i += 6
			default:
				return nil, false, "invalid escape in a string"
			}
		default:
			p.i++
		}
	}
	return nil, false, "unterminated string"
}

// count scans the count's value: an integer literal in range. Any other
// JSON value (a string, a fraction, an exponent, null, …) is refused.
func (p *jsonScanner) count() (int, *apiError) {
	start := p.i
	neg := p.eat('-')
	digits := p.i
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		p.i++
	}
	lit := p.b[start:p.i]
	switch {
	case p.i == digits:
		return 0, badRequest(CodeInvalidCount, fmt.Sprintf("count must be %s, not %s", countRange, describeValue(p.b[start:])))
	case p.b[digits] == '0' && p.i-digits > 1:
		return 0, badRequest(CodeInvalidBody, "malformed JSON: a number with a leading zero")
	case p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E'):
		return 0, badRequest(CodeInvalidCount, fmt.Sprintf("count must be %s, not a fraction or exponent (%s)", countRange, quoteShort(string(p.b[start:min(len(p.b), p.i+8)]))))
	}
	if neg || p.i-digits > 4 {
		return 0, badRequest(CodeInvalidCount, fmt.Sprintf("count %s is out of range; give %s", quoteShort(string(lit)), countRange))
	}
	v := 0
	for _, c := range lit {
		v = v*10 + int(c-'0')
	}
	if v < 1 || v > snowfence.MaxBatch {
		return 0, badRequest(CodeInvalidCount, fmt.Sprintf("count %d is out of range; give %s", v, countRange))
	}
	return v, nil
}

// describeValue names the kind of JSON value that starts b, for messages.
func describeValue(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return quoteShort(string(b[:min(len(b), 8)]))
}

// quoteShort quotes s for a message, cut to 40 bytes.
func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strconv.Quote(s)
}

// readBody reads the request body into buf (growing it up to max+1 bytes)
// and returns it. A body over max bytes is refused with 413 without reading
// more than max+1 bytes of it.
func readBody(r *http.Request, max int64, buf []byte) ([]byte, *apiError) {
	tooLarge := func() *apiError {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: CodeBodyTooLarge,
			message: fmt.Sprintf("the body is larger than %d bytes", max)}
	}
	if r.ContentLength > max {
		return buf, tooLarge()
	}
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return buf[:0], nil
	}
	b := buf[:0]
	for zero := 0; ; {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		room := int(min(int64(cap(b)), max+1))
		n, err := r.Body.Read(b[len(b):room])
		b = b[:len(b)+n]
		if int64(len(b)) > max {
			return b, tooLarge()
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, badRequest(CodeInvalidBody, "cannot read the body: "+err.Error())
		}
		if n == 0 {
			if zero++; zero > 100 {
				return b, badRequest(CodeInvalidBody, "cannot read the body: no progress")
			}
		}
	}
}

// checkContentType refuses a request body whose Content-Type is missing or
// is not application/json (parameters such as charset are allowed) with 415
// invalid_content_type: api/openapi.json lists application/json alone, and
// clients generated from it always send it. Call it only for a request that
// has a body.
func checkContentType(r *http.Request) *apiError {
	ct := r.Header.Get("Content-Type")
	if strings.EqualFold(ct, "application/json") {
		return nil
	}
	if ct == "" {
		return &apiError{status: http.StatusUnsupportedMediaType, code: CodeInvalidContentType,
			message: "the request has a body but no Content-Type; send Content-Type: application/json, or no body"}
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return &apiError{status: http.StatusUnsupportedMediaType, code: CodeInvalidContentType,
			message: fmt.Sprintf("Content-Type %s is not application/json", quoteShort(ct))}
	}
	return nil
}
