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
	b, err := json.Marshal(s.decodedWithWarnings(d))
	if err != nil {
		return s.writeError(w, &apiError{status: http.StatusInternalServerError, code: CodeInternal, message: "cannot encode the decoded ID: " + err.Error()})
	}
	w.Header()["Content-Type"] = s.jsonType
	w.Write(b)
	return http.StatusOK
}

// decodeID parses and decodes the text of an ID, in decimal or in its
// UUIDv8 form (snowfence.Schedule.ToUUID), refusing text that is neither
// (400). An ID dated after the server's clock is decoded all the same:
// decodedWithWarnings flags it.
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
	return d, nil
}

// Warning codes of a decoded ID (decodedID.Warnings): stable and
// machine-readable, as error codes are.
const (
	// WarningUnknownRegion: the region registry does not know the ID's
	// region number (its region is then ""); the message is
	// snowfence.Decoded.Warning.
	WarningUnknownRegion = "unknown_region"
	// WarningInFuture: the ID's timestamp is later than the server's clock
	// by more than the skew allowed for (futureSkew): no generator of a
	// fleet whose clocks agree with this server's can have issued it yet.
	// It is still decoded; a caller checking IDs it was handed treats it
	// as suspect.
	WarningInFuture = "in_future"
)

// A decodeWarning is one thing that looks wrong about a decoded ID.
type decodeWarning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// decodedID is what the decode endpoints answer: the decoded ID and, when
// any, the warnings about it in a list (left out when empty). Decoded's own
// warning stays for callers written before the list.
type decodedID struct {
	snowfence.Decoded
	Warnings []decodeWarning
}

// MarshalJSON writes the decoded ID's fields (snowfence.Decoded's JSON)
// followed by "warnings".
func (d decodedID) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(d.Decoded)
	if err != nil || len(d.Warnings) == 0 {
		return b, err
	}
	w, err := json.Marshal(d.Warnings)
	if err != nil {
		return nil, err
	}
	return append(append(append(b[:len(b)-1], `,"warnings":`...), w...), '}'), nil
}

// decodedWithWarnings lists what looks wrong about d: a region number the
// registry does not know, and a timestamp later than the server's clock
// (beyond futureSkew).
func (s *Server) decodedWithWarnings(d snowfence.Decoded) decodedID {
	out := decodedID{Decoded: d}
	if d.Warning != "" {
		out.Warnings = append(out.Warnings, decodeWarning{Code: WarningUnknownRegion, Message: d.Warning})
	}
	now := s.clock.Now().WallMs
	if ms := d.CreatedAt.UnixMilli(); ms > now+futureSkew.Milliseconds() {
		out.Warnings = append(out.Warnings, decodeWarning{Code: WarningInFuture, Message: fmt.Sprintf(
			"timestamped %s, %s after this server's clock (%s): no generator of this fleet can have issued it yet; check the ID, or the clock of the server that issued it",
			d.CreatedAt.UTC().Format(timeFormat), time.Duration(ms-now)*time.Millisecond, time.UnixMilli(now).UTC().Format(timeFormat))})
	}
	return out
}

// timeFormat is RFC 3339 with milliseconds, as in every snowfence output.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"
