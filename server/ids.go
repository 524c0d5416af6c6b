package server

import (
	"net/http"
	"strconv"

	"github.com/snowfence/snowfence"
)

// maxIDLen is the longest decimal ID: 9223372036854775807.
const maxIDLen = 19

// batchBuffers is the scratch space of one batch request, pooled.
type batchBuffers struct {
	ids  []snowfence.ID
	out  []byte
	body []byte
}

func newBatchBuffers() *batchBuffers {
	return &batchBuffers{
		ids:  make([]snowfence.ID, 0, snowfence.MaxBatch),
		out:  make([]byte, 0, len(`{"ids":[]}`)+snowfence.MaxBatch*(maxIDLen+3)),
		body: make([]byte, 0, 512),
	}
}

// mintIDs answers POST /v1/ids: one ID, or a batch when the request has a
// query. A request with a body goes through mintMany, which takes {} and
// null as no body and refuses any other.
func (s *Server) mintIDs(w http.ResponseWriter, r *http.Request, _ string) int {
	if r.ContentLength == 0 && r.URL.RawQuery == "" {
		return s.mintOne(w, r)
	}
	return s.mintMany(w, r, false)
}

// mintBatch answers POST /v1/ids:batch.
func (s *Server) mintBatch(w http.ResponseWriter, r *http.Request, _ string) int {
	return s.mintMany(w, r, true)
}

// mintOne answers POST /v1/ids without a query or body: the hot path. It
// writes {"id":"…","id_num":…} from a pooled buffer; it allocates nothing
// beyond what net/http does.
func (s *Server) mintOne(w http.ResponseWriter, r *http.Request) int {
	var g QuotaGrant
	if s.quota != nil {
		var status int
		if g, status = s.take(w, r, 1); status != 0 {
			return status
		}
	}
	id, err := s.gen.Next(r.Context())
	if g != nil {
		g.Done(err == nil)
	}
	if err != nil {
		return s.refuse(w, err)
	}
	bp := s.single.Get().(*[]byte)
	b := appendOne((*bp)[:0], id)
	h := w.Header()
	h["Content-Type"] = s.jsonType
	h["Cache-Control"] = s.noStore
	w.Write(b)
	*bp = b
	s.single.Put(bp)
	return http.StatusOK
}

// appendOne appends the single-ID response for id.
func appendOne(b []byte, id snowfence.ID) []byte {
	b = append(b, `{"id":"`...)
	start := len(b)
	b = strconv.AppendInt(b, int64(id), 10)
	end := len(b)
	b = append(b, `","id_num":`...)
	b = append(b, b[start:end]...) // formatted once
	return append(b, '}')
}

// appendBatch appends the batch response for ids.
func appendBatch(b []byte, ids []snowfence.ID) []byte {
	b = append(b, `{"ids":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(id), 10)
		b = append(b, '"')
	}
	return append(b, "]}"...)
}

// mintMany answers POST /v1/ids with a query or body (batch is false) and
// POST /v1/ids:batch (batch is true). The count comes from ?count=N or from
// the body {"count":N}, never both. A body must say Content-Type:
// application/json. A body without fields, {} or null, is the same request
// as no body. Without a count, /v1/ids mints one ID and /v1/ids:batch
// refuses.
func (s *Server) mintMany(w http.ResponseWriter, r *http.Request, batch bool) int {
	bb := s.batch.Get().(*batchBuffers)
	defer s.batch.Put(bb)

	n, fromQuery, e := countFromQuery(r.URL.RawQuery)
	if e != nil {
		return s.writeError(w, e)
	}
	body, e := readBody(r, s.maxBody, bb.body)
	bb.body = body[:0]
	if e != nil {
		return s.writeError(w, e)
	}
	if len(body) > 0 {
		if e := checkContentType(r); e != nil {
			return s.writeError(w, e)
		}
		var bodyN int
		var inBody bool
		if !batch && !noFields(body) {
			return s.writeError(w, badRequest(CodeInvalidBody, "POST /v1/ids takes no body but one without fields, {} or null; use ?count=N or POST /v1/ids:batch with {\"count\": N}"))
		}
		if bodyN, inBody, e = parseMintBody(body); e != nil {
			return s.writeError(w, e)
		}
		if inBody {
			if fromQuery {
				return s.writeError(w, badRequest(CodeConflictingCount, "the count is given both in the query and in the body; give one"))
			}
			n, fromQuery = bodyN, true
		}
	}
	if !fromQuery {
		if batch {
			return s.writeError(w, badRequest(CodeInvalidCount, "count is required: send {\"count\": N} or ?count=N with "+countRange))
		}
		return s.mintOne(w, r)
	}

	var g QuotaGrant
	if s.quota != nil {
		var status int
		if g, status = s.take(w, r, n); status != 0 {
			return status
		}
	}
	ids, err := s.gen.AppendN(r.Context(), bb.ids[:0], n)
	if g != nil {
		g.Done(err == nil)
	}
	bb.ids = ids[:0]
	if err != nil {
		return s.refuse(w, err)
	}
	out := appendBatch(bb.out[:0], ids)
	bb.out = out[:0]
	h := w.Header()
	h["Content-Type"] = s.jsonType
	h["Cache-Control"] = s.noStore
	h["Content-Length"] = []string{strconv.Itoa(len(out))}
	w.Write(out)
	return http.StatusOK
}

// refuse answers a refused mint: 503 with Retry-After and the code that says
// why.
func (s *Server) refuse(w http.ResponseWriter, err error) int {
	e := refusal(err)
	s.log.Debug("mint refused", "code", e.code, "reason", e.reason, "error", err)
	return s.writeError(w, e)
}
