package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/snowfence/snowfence"
)

// decode answers GET /v1/ids/{id}/decode with the ID taken apart by the
// schedule, its region named when the server has region names; text is the
// {id} segment of the path, the ID in decimal or its UUIDv8 form (then the
// answer's "uuid" says so).
func (s *Server) decode(w http.ResponseWriter, _ *http.Request, text string) int {
	d, e := s.decodeID(text)
	if e != nil {
		return s.writeError(w, e)
	}
	b, err := json.Marshal(d)
	if err != nil {
		return s.writeError(w, &apiError{status: http.StatusInternalServerError, code: CodeInternal, message: "cannot encode the decoded ID: " + err.Error()})
	}
	w.Header()["Content-Type"] = s.jsonType
	w.Write(b)
	return http.StatusOK
}

// decodeID parses and decodes the text of an ID, in decimal or in its
// UUIDv8 form (snowfence.Schedule.ToUUID), refusing text that is neither
// (400) and IDs whose timestamp is later than the server's clock allows
// (422).
func (s *Server) decodeID(text string) (snowfence.Decoded, *apiError) {
	var u snowfence.UUID
	id, err := snowfence.ParseID(text)
	if err != nil && len(text) == len(u.String()) {
		// 36 characters is never a decimal ID: read the UUIDv8 form.
		if u, err = snowfence.ParseUUID(text); err != nil {
			return snowfence.Decoded{}, badRequest(CodeInvalidID, fmt.Sprintf("%s is neither an ID nor its UUID form: %v", quoteShort(text), err))
		}
		if id, err = s.schedule.FromUUID(u); err != nil {
			return snowfence.Decoded{}, badRequest(CodeInvalidID, err.Error())
		}
	}
	if err != nil {
		msg := err.Error()
		var pe *snowfence.ParseError
		if errors.As(err, &pe) {
			msg = fmt.Sprintf("%s is not an ID: %s", quoteShort(text), pe.Reason)
		}
		return snowfence.Decoded{}, badRequest(CodeInvalidID, msg)
	}
	d, err := s.schedule.DecodeNamed(id, s.names)
	if err != nil {
		return snowfence.Decoded{}, badRequest(CodeInvalidID, err.Error())
	}
	d.UUID = u
	now := s.clock.Now().WallMs
	if ms := d.CreatedAt.UnixMilli(); ms > now+futureSkew.Milliseconds() {
		return snowfence.Decoded{}, &apiError{status: http.StatusUnprocessableEntity, code: CodeIDInFuture, message: fmt.Sprintf(
			"ID %s is timestamped %s, %s after this server's clock (%s); no generator can have issued it yet",
			id, d.CreatedAt.UTC().Format(timeFormat), time.Duration(ms-now)*time.Millisecond, time.UnixMilli(now).UTC().Format(timeFormat))}
	}
	return d, nil
}

// timeFormat is RFC 3339 with milliseconds, as in every snowfence output.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"
