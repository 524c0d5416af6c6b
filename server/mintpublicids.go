package server

import (
	"net/http"
	"strconv"

	"github.com/snowfence/snowfence"
)

// mintPublicIDs answers POST /v1/public-ids:mint: {"type":"order","count":N}
// (1 to 1000) → {"ids":["…",…],"public_ids":["order_…",…]}, N fresh IDs
// and each one sealed, pairwise in the same order.
//
// It is the way to public IDs for new rows without the permission to seal
// IDs of one's choosing (PublicIDSealers), which is an oracle: it is for
// every caller Config.Quota admits, since a caller learns the pairing only
// of IDs it was just given — the internal IDs it would have minted anyway
// (POST /v1/ids), and needs to store its rows under. Each ID costs one of
// the caller's quota, as a minted one does, and a mint the generator
// refuses gives the quota back and seals nothing.
func (s *Server) mintPublicIDs(w http.ResponseWriter, r *http.Request, _ string) int {
	if s.publicIDs == nil {
		return s.writeError(w, publicIDsDisabled())
	}
	if r.ContentLength != 0 {
		// A body must say it is JSON; no body at all is refused below.
		if e := checkContentType(r); e != nil {
			return s.writeError(w, e)
		}
	}
	if r.URL.RawQuery != "" {
		return s.writeError(w, badRequest(CodeInvalidQuery, "POST /v1/public-ids:mint takes no query parameters; send {\"type\": \"order\", \"count\": N}"))
	}
	body, e := readBody(r, s.maxBody, nil)
	if e != nil {
		return s.writeError(w, e)
	}
	prefix, n, e := parseMintSealBody(body)
	if e != nil {
		return s.writeError(w, e)
	}
	var g QuotaGrant
	if s.quota != nil {
		var status int
		if g, status = s.take(w, r, n); status != 0 {
			return status
		}
	}
	ids, err := s.gen.AppendN(r.Context(), make([]snowfence.ID, 0, n), n)
	if g != nil {
		g.Done(err == nil)
	}
	if err != nil {
		return s.refuse(w, err)
	}
	out := make([]byte, 0, len(`{"ids":[],"public_ids":[]}`)+n*(maxIDLen+3+len(prefix)+31))
	out = appendBatch(out, ids)
	out = append(out[:len(out)-1], `,"public_ids":[`...)
	for i, id := range ids {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		if out, err = s.publicIDs.AppendSeal(out, prefix, id); err != nil { // the prefix is checked, the IDs minted
			return s.writeError(w, &apiError{status: http.StatusInternalServerError, code: CodeInternal, message: err.Error()})
		}
		out = append(out, '"')
	}
	out = append(out, "]}"...)
	h := w.Header()
	h["Content-Type"] = s.jsonType
	h["Cache-Control"] = s.noStore
	h["Content-Length"] = []string{strconv.Itoa(len(out))}
	w.Write(out)
	return http.StatusOK
}

// parseMintSealBody reads a mint-and-seal body: one JSON object with exactly
// the members "type", a string (the type prefix: TypeID rules, not empty),
// and "count", an integer literal from 1 to snowfence.MaxBatch. It is as
// strict as parseSealBody and for the same reasons.
func parseMintSealBody(b []byte) (prefix string, n int, e *apiError) {
	p := jsonScanner{b: b}
	seen, e := p.object(`{"type": "order", "count": 10}`, []string{"type", "count"}, func(name string) (e *apiError) {
		if name == "type" {
			prefix, e = p.publicIDType()
		} else {
			n, e = p.count()
		}
		return e
	})
	switch {
	case e != nil:
		return "", 0, e
	case !seen["type"]:
		return "", 0, badRequest(CodeInvalidType, `the body needs "type", the type prefix such as "order"`)
	case !seen["count"]:
		return "", 0, badRequest(CodeInvalidCount, `the body needs "count", `+countRange)
	}
	return prefix, n, nil
}
