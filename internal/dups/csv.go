package dups

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// csv reads the IDs of one column of a CSV file through encoding/csv:
// exports are rarely large enough in CSV form for its cost to matter
// beside their quoting rules (RFC 4180), which it gets right.
func (s *scanner) csv(ctx context.Context, r io.Reader, name string) error {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	col, byName := -1, false
	if n, err := strconv.Atoi(s.opts.Column); err == nil {
		if n < 1 {
			return fmt.Errorf("%w: column %d; columns are numbered from 1", ErrColumn, n)
		}
		col = n - 1
	} else {
		byName = true
	}
	for rec := 0; ; rec++ {
		if rec%batchLen == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		fields, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
			// A quote left open runs the field on to the next closing
			// quote or the end of the file: every line it spans was
			// read as one field and none of their IDs checked.
			n := max(int64(pe.Line-pe.StartLine+1), 1)
			reason := pe.Err.Error()
			if n > 1 {
				reason = fmt.Sprintf("%s: lines %d-%d were read as one field, their IDs not checked", reason, pe.StartLine, pe.Line)
			}
			s.badLines(name, int64(pe.StartLine), n, nil, reason)
			continue
		}
		if err != nil {
			return err
		}
		if rec == 0 && byName {
			for i, f := range fields {
				if strings.TrimSpace(f) == s.opts.Column {
					col = i
				}
			}
			if col < 0 {
				return fmt.Errorf("%w: the header has no column %q", ErrColumn, s.opts.Column)
			}
			continue
		}
		line, _ := cr.FieldPos(0)
		if col >= len(fields) {
			s.bad(name, int64(line), nil, fmt.Sprintf("%d fields, no column %d", len(fields), col+1))
			continue
		}
		id, t, kind := ParseLine([]byte(fields[col]))
		if kind != Decimal {
			var ok bool
			if id, ok = s.id(t); !ok {
				if rec == 0 {
					continue // a header
				}
				s.bad(name, int64(line), t, "not an ID")
				continue
			}
		}
		if err := s.add(id); err != nil {
			return err
		}
	}
}
