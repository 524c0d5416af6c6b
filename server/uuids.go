package server

import (
	"net/http"
	"strconv"

	"github.com/snowfence/snowfence"
)

// uuidBuffers is the scratch space of one UUID request, pooled.
type uuidBuffers struct {
	uuids []snowfence.UUID
	out   []byte
	body  []byte
}

func newUUIDBuffers() *uuidBuffers {
	return &uuidBuffers{
		uuids: make([]snowfence.UUID, 0, snowfence.MaxBatch),
		out:   make([]byte, 0, len(`{"uuids":[]}`)+snowfence.MaxBatch*(36+3)),
		body:  make([]byte, 0, 64),
	}
}

// mintUUIDs answers POST /v1/uuids: one UUIDv7 {"uuid":"…"}, or with
// ?count=N (1 to 1000) N of them in increasing order {"uuids":[…]}. It
// needs no lease, so it answers while the generator is fenced. Like POST
// /v1/ids it takes no body but one without fields ({} or null, as
// application/json), and it asks the quota,
// if any, for count units, so a caller's quota and its per-request checks
// cover UUIDs as they cover IDs.
func (s *Server) mintUUIDs(w http.ResponseWriter, r *http.Request, _ string) int {
	ub := s.uuidBufs.Get().(*uuidBuffers)
	defer s.uuidBufs.Put(ub)
	n, many, e := countFromQuery(r.URL.RawQuery)
	if e != nil {
		return s.writeError(w, e)
	}
	body, e := readBody(r, s.maxBody, ub.body)
	ub.body = body[:0]
	if e != nil {
		return s.writeError(w, e)
	}
	if len(body) > 0 {
		if e := checkContentType(r); e != nil {
			return s.writeError(w, e)
		}
		if !noFields(body) {
			return s.writeError(w, badRequest(CodeInvalidBody, "POST /v1/uuids takes no body but one without fields, {} or null; use ?count=N"))
		}
	}
	if !many {
		n = 1
	}
	if s.quota != nil {
		g, status := s.take(w, r, n)
		if status != 0 {
			return status
		}
		defer g.Done(true)
	}
	us := s.uuids.AppendN(ub.uuids[:0], n)
	ub.uuids = us[:0]
	out := ub.out[:0]
	if many {
		out = append(out, `{"uuids":[`...)
		for i, u := range us {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, '"')
			out, _ = u.AppendText(out)
			out = append(out, '"')
		}
		out = append(out, "]}"...)
	} else {
		out = append(out, `{"uuid":"`...)
		out, _ = us[0].AppendText(out)
		out = append(out, `"}`...)
	}
	ub.out = out[:0]
	h := w.Header()
	h["Content-Type"] = s.jsonType
	h["Cache-Control"] = s.noStore
	h["Content-Length"] = []string{strconv.Itoa(len(out))}
	w.Write(out)
	return http.StatusOK
}
