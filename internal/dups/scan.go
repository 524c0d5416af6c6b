package dups

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/snowfence/snowfence"
)

// ErrColumn reports a --column that names no column of a file's header,
// or is not a column number from 1.
var ErrColumn = errors.New("dups: no such column")

// Options configures Scan. The zero value reads one ID per line, in the
// default memory budget, with the default schedule for the UUIDv8 form.
type Options struct {
	// Config is the Finder's configuration; Scan sets ExpectedIDs from
	// the files' sizes.
	Config
	// Column, if not "", reads the files as CSV (RFC 4180) and takes the
	// IDs from one column: its number from 1, or its name in the first
	// record (the header). With a number, a first record whose field is
	// not an ID is taken for a header and skipped.
	Column string
	// Schedule reads IDs given in their UUIDv8 form. The zero value means
	// snowfence.DefaultSchedule().
	Schedule snowfence.Schedule
	// OnBad, if not nil, is called for every line (CSV: record) that is
	// not an ID. Scan counts them and goes on.
	OnBad func(BadLine)
}

// A BadLine is a line of input that holds no ID.
type BadLine struct {
	File string
	Line int64 // from 1
	// Lines is how many input lines it covers: 1, or more when a CSV
	// field's unterminated quote ran on over the lines after it, which
	// were read as one field and not checked.
	Lines int64
	// Text is the line (the field, for CSV), cut to 60 bytes.
	Text   string
	Reason string
}

// A Duplicate is an ID found more than once.
type Duplicate struct {
	ID    snowfence.ID
	Count int64
}

// Summary is what Scan read and found.
type Summary struct {
	Files int
	// IDs is the number of IDs read, copies included.
	IDs int64
	// Bad is the number of input lines that held no ID or could not be
	// read (every line a broken CSV quote swallowed among them): the
	// duplicates among them, if any, were not found.
	Bad int64
	// Duplicates is the number of distinct IDs found more than once, and
	// Extra the number of copies beyond the first of each.
	Duplicates, Extra int64
	// Partitions is the number of temporary partitions the IDs spilled
	// to, 0 when they fitted in memory.
	Partitions int
}

// Scan reads the IDs of files (a name ending in ".gz" is read through
// gzip) and calls onDup for each duplicate. Bad lines are counted and
// passed to opts.OnBad; they do not stop it. The summary is valid as far
// as Scan got when it returns an error.
func Scan(ctx context.Context, opts Options, files []string, onDup func(Duplicate) error) (Summary, error) {
	var sum Summary
	if opts.Schedule.IsZero() {
		opts.Schedule = snowfence.DefaultSchedule()
	}
	var total int64
	for _, name := range files {
		st, err := os.Stat(name)
		if err != nil {
			return sum, err
		}
		total += st.Size()
	}
	s := &scanner{opts: opts, sum: &sum}
	opts.ExpectedIDs = func(seen int64) int64 {
		if s.consumed == 0 {
			return 0
		}
		return int64(float64(seen) * float64(total) / float64(s.consumed))
	}
	f, err := NewFinder(opts.Config)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	s.finder = f
	s.batch = make([]uint64, 0, batchLen)
	if opts.Column == "" {
		s.buf = make([]byte, readBufferLen(f.cfg.Memory))
	}
	for _, name := range files {
		if err := s.file(ctx, name); err != nil {
			return sum, err
		}
		sum.Files++
	}
	if err := s.flush(); err != nil {
		return sum, err
	}
	sum.IDs = f.Seen()
	sum.Partitions = f.Partitions()
	err = f.Duplicates(ctx, func(id uint64, count int64) error {
		sum.Duplicates++
		sum.Extra += count - 1
		return onDup(Duplicate{ID: snowfence.ID(id), Count: count})
	})
	if err != nil {
		return sum, err
	}
	return sum, f.Close()
}

// batchLen is the number of IDs a scanner hands the Finder at a time.
const batchLen = 4096

// readBufferLen is the line reader's buffer: a sixteenth of the budget,
// at most 1 MiB.
func readBufferLen(memory int64) int {
	return int(min(memory/16, 1<<20))
}

// scanner is Scan's state across files.
type scanner struct {
	opts     Options
	sum      *Summary
	finder   *Finder
	batch    []uint64
	buf      []byte
	consumed int64 // bytes read from the files, compressed or not
}

// file reads one file.
func (s *scanner) file(ctx context.Context, name string) error {
	fh, err := os.Open(name)
	if err != nil {
		return err
	}
	defer fh.Close()
	var r io.Reader = &countingReader{r: fh, n: &s.consumed}
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		r = zr
	}
	if s.opts.Column != "" {
		err = s.csv(ctx, r, name)
	} else {
		err = s.lines(ctx, r, name)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// add queues one ID for the Finder.
func (s *scanner) add(id uint64) error {
	s.batch = append(s.batch, id)
	if len(s.batch) == cap(s.batch) {
		return s.flush()
	}
	return nil
}

// flush hands the queued IDs to the Finder.
func (s *scanner) flush() error {
	err := s.finder.Add(s.batch)
	s.batch = s.batch[:0]
	return err
}

// bad counts and reports a line that holds no ID.
func (s *scanner) bad(name string, line int64, text []byte, reason string) {
	s.badLines(name, line, 1, text, reason)
}

// badLines counts n input lines from line as bad, for one reason.
func (s *scanner) badLines(name string, line, n int64, text []byte, reason string) {
	s.sum.Bad += n
	if s.opts.OnBad == nil {
		return
	}
	t := text
	if len(t) > 60 {
		t = t[:60]
	}
	s.opts.OnBad(BadLine{File: name, Line: line, Lines: n, Text: string(t), Reason: reason})
}

// id reads an ID from a trimmed line or field that is not in canonical
// decimal: the UUIDv8 form, or nothing.
func (s *scanner) id(b []byte) (uint64, bool) {
	return parseUUIDForm(b, s.opts.Schedule)
}

// countingReader counts the bytes read through it into *n.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}
