package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/publicid"
)

// sealMaxBodyBytes is the largest body POST /v1/public-ids takes (when
// Config.MaxBodyBytes is smaller): 1,000 IDs of 19 digits in quotes and
// commas are about 22 KB.
const sealMaxBodyBytes = 64 << 10

// PublicIDOpeners decides which callers may open sealed public IDs (GET
// /v1/public-ids/{pid}), which turns a public ID back into the internal
// one. Package perimeter implements it from the callers file
// ("open_public_ids"); AnyCallerOpens lets every caller.
type PublicIDOpeners interface {
	// MayOpenPublicIDs returns nil when the caller of r may open sealed
	// public IDs, and otherwise an error saying why (a 403 forbidden). It
	// is called before the ID is read, so this route tells a caller that
	// may not open nothing of it (one that may seal can still test
	// guesses: PublicIDSealers). It must be safe for concurrent use.
	MayOpenPublicIDs(r *http.Request) error
}

// PublicIDSealers decides which callers may seal IDs of their choosing
// (POST /v1/public-ids). Sealing is deterministic, so a caller that may
// seal can test any guess of the internal ID behind a public ID it holds
// (seal the guess, compare): with one ID it minted to tell it the machine
// and time, a search of the IDs minted near it finds the internal ID of a
// public ID made then (docs/public-ids.md). It is a permission of its own,
// apart from opening; minting new IDs sealed (POST /v1/public-ids:mint)
// needs neither. Package perimeter implements it from the callers file
// ("seal_public_ids"); AnyCallerOpens lets every caller.
type PublicIDSealers interface {
	// MaySealPublicIDs returns nil when the caller of r may seal IDs of
	// its choosing, and otherwise an error saying why and what grants it
	// (a 403 forbidden). It is called before the body is read. It must
	// be safe for concurrent use.
	MaySealPublicIDs(r *http.Request) error
}

// AnyCallerOpens is the PublicIDOpeners and PublicIDSealers that lets
// every caller open sealed public IDs and seal IDs of its choosing: for a
// service whose listener only trusted callers reach and which has no
// mutual TLS to tell callers apart. A caller that may open learns every
// internal ID outright, so letting it seal too reveals nothing more.
type AnyCallerOpens struct{}

// MayOpenPublicIDs implements PublicIDOpeners: every caller may.
func (AnyCallerOpens) MayOpenPublicIDs(*http.Request) error { return nil }

// MaySealPublicIDs implements PublicIDSealers: every caller may.
func (AnyCallerOpens) MaySealPublicIDs(*http.Request) error { return nil }

// sealPublicIDs answers POST /v1/public-ids: {"type":"order","ids":["…",…]}
// (1 to 1000 IDs) → {"public_ids":["order_…",…]}, in the same order.
func (s *Server) sealPublicIDs(w http.ResponseWriter, r *http.Request, _ string) int {
	if s.publicIDs == nil {
		return s.writeError(w, publicIDsDisabled())
	}
	// Before anything is read: a caller that may not seal runs no test of
	// a guess, good or bad.
	if e := s.maySeal(r); e != nil {
		return s.writeError(w, e)
	}
	if r.ContentLength != 0 {
		// A body must say it is JSON; no body at all is refused below.
		if e := checkContentType(r); e != nil {
			return s.writeError(w, e)
		}
	}
	if r.URL.RawQuery != "" {
		return s.writeError(w, badRequest(CodeInvalidQuery, "POST /v1/public-ids takes no query parameters"))
	}
	body, e := readBody(r, max(s.maxBody, sealMaxBodyBytes), nil)
	if e != nil {
		return s.writeError(w, e)
	}
	prefix, ids, e := parseSealBody(body)
	if e != nil {
		return s.writeError(w, e)
	}
	// The perimeter's checks cover sealing too (a caller it refuses, or
	// no longer trusts, seals nothing), and each sealed ID costs one ID of
	// the caller's quota, as each minted one does.
	if s.quota != nil {
		g, status := s.take(w, r, len(ids))
		if status != 0 {
			return status
		}
		defer g.Done(true)
	}
	out := make([]byte, 0, len(`{"public_ids":[]}`)+len(ids)*(len(prefix)+32))
	out = append(out, `{"public_ids":[`...)
	for i, id := range ids {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		var err error
		if out, err = s.publicIDs.AppendSeal(out, prefix, id); err != nil { // checked by parseSealBody
			return s.writeError(w, &apiError{status: http.StatusInternalServerError, code: CodeInternal, message: err.Error()})
		}
		out = append(out, '"')
	}
	out = append(out, "]}"...)
	w.Header()["Content-Type"] = s.jsonType
	w.Write(out)
	return http.StatusOK
}

// maySeal is the seal permission's check: nil when the caller of r may seal
// IDs of its choosing, else the 403.
func (s *Server) maySeal(r *http.Request) *apiError {
	const instead = "; to make public IDs for new rows, mint them sealed with POST /v1/public-ids:mint, which needs no permission to seal"
	if s.sealers == nil {
		return &apiError{status: http.StatusForbidden, code: CodeForbidden, message: "no caller may seal IDs of its choosing on this server" + instead}
	}
	if err := s.sealers.MaySealPublicIDs(r); err != nil {
		return &apiError{status: http.StatusForbidden, code: CodeForbidden, message: err.Error() + instead}
	}
	return nil
}

// openPublicID answers GET /v1/public-ids/{pid} for callers who may open:
// {"id":"…","type":"order","key_version":"2"}.
//
// A forged or altered ID, one sealed under a key version the keyset does
// not list and one under a retired key get the same answer, 404
// public_id_not_found with the same message: an opener that relays
// answers to the outside world tells nobody which versions exist or are
// retired, or whether a text was ever genuine. Only text that is not the
// form of a sealed ID at all is a 400, which anyone can tell by looking.
func (s *Server) openPublicID(w http.ResponseWriter, r *http.Request, pid string) int {
	if s.publicIDs == nil {
		return s.writeError(w, publicIDsDisabled())
	}
	if s.openers == nil {
		return s.writeError(w, &apiError{status: http.StatusForbidden, code: CodeForbidden, message: "no caller may open public IDs on this server"})
	}
	if err := s.openers.MayOpenPublicIDs(r); err != nil {
		return s.writeError(w, &apiError{status: http.StatusForbidden, code: CodeForbidden, message: err.Error()})
	}
	o, err := s.publicIDs.Open(pid)
	switch {
	case errors.Is(err, publicid.ErrInvalid):
		return s.writeError(w, badRequest(CodeInvalidPublicID, fmt.Sprintf("%s is not a sealed public ID: a type prefix, '_' and 27 characters of 0-9 and a-z but i, l, o, u", quoteShort(pid))))
	case err != nil:
		return s.writeError(w, &apiError{status: http.StatusNotFound, code: CodePublicIDNotFound,
			message: fmt.Sprintf("%s does not open under this server's keys", quoteShort(pid))})
	}
	b := make([]byte, 0, 96+len(o.Prefix))
	b = append(b, `{"id":"`...)
	b = strconv.AppendInt(b, int64(o.ID), 10)
	b = append(b, `","type":"`...)
	b = append(b, o.Prefix...) // a-z and '_': nothing to escape
	b = append(b, `","key_version":"`...)
	b = append(b, o.KeyVersion...)
	b = append(b, `"}`...)
	h := w.Header()
	h["Content-Type"] = s.jsonType
	h["Cache-Control"] = s.noStore // the internal ID, for this caller only
	w.Write(b)
	return http.StatusOK
}

func publicIDsDisabled() *apiError {
	return &apiError{status: http.StatusNotImplemented, code: CodePublicIDsDisabled,
		message: "public IDs are not enabled on this server: it has no keyset (snowfence serve --public-id-keys)"}
}

// parseSealBody reads a seal body: one JSON object with exactly the members
// "type", a string (the type prefix: TypeID rules, not empty), and "ids",
// an array of 1 to snowfence.MaxBatch strings, each the canonical decimal
// form of an ID. It is as strict as parseCountBody and for the same
// reasons: names are matched exactly once their escapes are decoded,
// unknown and repeated members are refused, an ID must be a string (JSON
// numbers lose digits past 2^53), and nothing may follow the object.
func parseSealBody(b []byte) (prefix string, ids []snowfence.ID, e *apiError) {
	p := jsonScanner{b: b}
	seen, e := p.object(`{"type": "order", "ids": ["97301141913751557"]}`, []string{"type", "ids"}, func(name string) (e *apiError) {
		if name == "type" {
			prefix, e = p.publicIDType()
		} else {
			ids, e = p.idList()
		}
		return e
	})
	switch {
	case e != nil:
		return "", nil, e
	case !seen["type"]:
		return "", nil, badRequest(CodeInvalidType, `the body needs "type", the type prefix such as "order"`)
	case !seen["ids"]:
		return "", nil, badRequest(CodeInvalidCount, `the body needs "ids", 1 to 1000 IDs`)
	}
	return prefix, ids, nil
}

// object scans a body that is one JSON object and nothing after it: each
// member's name, which must be one of names and not repeated, then member
// to scan its value. It returns the names seen. example is a body to show
// when it is not an object.
func (p *jsonScanner) object(example string, names []string, member func(name string) *apiError) (map[string]bool, *apiError) {
	malformed := func(what string) (map[string]bool, *apiError) {
		return nil, badRequest(CodeInvalidBody, "malformed JSON: "+what)
	}
	p.space()
	if !p.eat('{') {
		return nil, badRequest(CodeInvalidBody, "the body must be a JSON object such as "+example)
	}
	seen := map[string]bool{}
	p.space()
	if !p.eat('}') {
		for {
			name, bad := p.text()
			if bad != "" {
				return malformed(bad)
			}
			p.space()
			if !p.eat(':') {
				return malformed("expected ':' after the field name")
			}
			p.space()
			switch {
			case !slices.Contains(names, name):
				return nil, badRequest(CodeInvalidBody, fmt.Sprintf("unknown field %s; the body takes %s", quoteShort(name), strings.Join(names, " and ")))
			case seen[name]:
				return nil, badRequest(CodeInvalidBody, name+" is given more than once")
			}
			seen[name] = true
			if e := member(name); e != nil {
				return nil, e
			}
			p.space()
			if p.eat('}') {
				break
			}
			if !p.eat(',') {
				return malformed("expected ',' or '}' after a value")
			}
			p.space()
		}
	}
	p.space()
	if p.i != len(p.b) {
		return nil, badRequest(CodeInvalidBody, "unexpected data after the JSON object")
	}
	return seen, nil
}

// publicIDType scans the value of a body's "type": a JSON string holding a
// type prefix of a sealed public ID (TypeID rules, not empty).
func (p *jsonScanner) publicIDType() (string, *apiError) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", badRequest(CodeInvalidType, fmt.Sprintf("type must be a string, not %s", describeValue(p.b[p.i:])))
	}
	prefix, bad := p.text()
	if bad != "" {
		return "", badRequest(CodeInvalidBody, "malformed JSON: "+bad)
	}
	if publicid.CheckPrefix(prefix) != nil || prefix == "" {
		return "", badRequest(CodeInvalidType, fmt.Sprintf("type %s is not a type prefix: 1 to 63 characters of a-z and '_', starting and ending with a letter", quoteShort(prefix)))
	}
	return prefix, nil
}

// text scans a JSON string and returns its decoded value.
func (p *jsonScanner) text() (string, string) {
	tok, escaped, bad := p.str()
	if bad != "" {
		return "", bad
	}
	if !escaped {
		return string(tok[1 : len(tok)-1]), ""
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", "invalid string"
	}
	return s, ""
}

// idList scans the array of IDs to seal.
func (p *jsonScanner) idList() ([]snowfence.ID, *apiError) {
	if !p.eat('[') {
		return nil, badRequest(CodeInvalidBody, fmt.Sprintf("ids must be an array of ID strings, not %s", describeValue(p.b[p.i:])))
	}
	var ids []snowfence.ID
	p.space()
	if p.eat(']') {
		return nil, badRequest(CodeInvalidCount, "ids is empty; give 1 to 1000 IDs")
	}
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, badRequest(CodeInvalidID, fmt.Sprintf("ids[%d] must be a string holding the ID's decimal form, not %s", len(ids), describeValue(p.b[p.i:])))
		}
		s, bad := p.text()
		if bad != "" {
			return nil, badRequest(CodeInvalidBody, "malformed JSON: "+bad)
		}
		id, err := snowfence.ParseID(s)
		if err != nil {
			msg := err.Error()
			var pe *snowfence.ParseError
			if errors.As(err, &pe) {
				msg = fmt.Sprintf("ids[%d] %s is not an ID: %s", len(ids), quoteShort(s), pe.Reason)
			}
			return nil, badRequest(CodeInvalidID, msg)
		}
		if len(ids) == snowfence.MaxBatch {
			return nil, badRequest(CodeInvalidCount, "ids holds more than 1000 IDs; give 1 to 1000")
		}
		ids = append(ids, id)
		p.space()
		if p.eat(']') {
			return ids, nil
		}
		if !p.eat(',') {
			return nil, badRequest(CodeInvalidBody, "malformed JSON: expected ',' or ']' in ids")
		}
		p.space()
	}
}
