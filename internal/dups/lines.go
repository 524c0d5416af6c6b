package dups

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// lines reads one ID per line from r. Lines end in "\n" (a "\r" before it
// is trimmed); the last may end without one. A line longer than the read
// buffer is bad, and skipped to its end.
func (s *scanner) lines(ctx context.Context, r io.Reader, name string) error {
	buf := s.buf
	start, end := 0, 0 // buf[start:end] is read and not yet split
	var lineNo int64
	skipping := false // inside an over-long line, already reported
	for {
		if e := ctx.Err(); e != nil {
			return e
		}
		n, err := r.Read(buf[end:])
		end += n
		for {
			i := bytes.IndexByte(buf[start:end], '\n')
			if i < 0 {
				break
			}
			line := buf[start : start+i]
			start += i + 1
			lineNo++
			if skipping {
				skipping = false
				continue
			}
			if err := s.line(name, lineNo, line); err != nil {
				return err
			}
		}
		if err == io.EOF {
			if start < end {
				lineNo++
				if !skipping {
					return s.line(name, lineNo, buf[start:end])
				}
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case start == end:
			start, end = 0, 0
		case end == len(buf) && start == 0:
			if !skipping {
				s.bad(name, lineNo+1, buf, fmt.Sprintf("longer than %d bytes", len(buf)))
				skipping = true
			}
			start, end = 0, 0
		case end == len(buf):
			end = copy(buf, buf[start:end])
			start = 0
		}
	}
}

// line reads one line's ID.
func (s *scanner) line(name string, lineNo int64, line []byte) error {
	id, t, kind := ParseLine(line)
	switch kind {
	case Blank:
		return nil
	case Decimal:
		return s.add(id)
	}
	if id, ok := s.id(t); ok {
		return s.add(id)
	}
	s.bad(name, lineNo, t, "not an ID")
	return nil
}
