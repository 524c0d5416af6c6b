package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Bounds of a frame.
const (
	// HeaderSize is the size of a frame's header: kind, generator index
	// (uint16) and count (uint32), little-endian.
	HeaderSize = 7
	// MaxGen is the highest generator index a header holds.
	MaxGen = 1<<16 - 1
	// MaxValues bounds a values frame's count, so a corrupt header cannot
	// make the reader allocate without bound.
	MaxValues = 1 << 20
	// MaxText bounds a text frame's count, in bytes; WriteText shortens a
	// longer text.
	MaxText = 4 << 10
)

// ErrMalformed is the error Read returns (wrapped, with the details) for a
// stream that is not a sequence of frames: an unknown kind or a count over
// its bound.
var ErrMalformed = errors.New("wire: malformed frame")

// ErrInvalid is the error Writer returns (wrapped, with the details) for a
// frame it will not write: an unknown kind, a payload of the other form
// than the kind's, a generator index outside 0–MaxGen or too many values.
var ErrInvalid = errors.New("wire: invalid frame")

// A Frame is one decoded frame.
type Frame struct {
	Kind Kind
	// Gen is the index, in its process, of the generator (or holder) the
	// frame is about; 0 for a frame about the whole process.
	Gen int
	// Vals is the payload of a values kind (empty for a text kind).
	Vals []int64
	// Text is the payload of a text kind (empty for a values kind).
	Text string
}

// String is f on one line, as a test log shows it: the kind's name, the
// generator index, then the values or the text ("ids 0 17 18",
// "fenced 1 snowfence: …").
func (f Frame) String() string {
	var b strings.Builder
	b.WriteString(f.Kind.String())
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(f.Gen))
	if f.Kind.Text() {
		if f.Text != "" {
			b.WriteByte(' ')
			b.WriteString(strings.ReplaceAll(f.Text, "\n", " "))
		}
		return b.String()
	}
	for _, v := range f.Vals {
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(v, 10))
	}
	return b.String()
}

// Writer writes frames to a holder's standard output; it is safe for
// concurrent use by the holder's generators. A frame is written whole
// under its lock, into a buffer that Flush writes out.
type Writer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

// NewWriter returns a Writer on w, with a buffer of 256 KiB.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 256<<10)}
}

// Write appends one frame of a values kind to the buffer.
func (f *Writer) Write(kind Kind, gen int, vals []int64) error {
	if !kind.Known() || kind.Text() || gen < 0 || gen > MaxGen || len(vals) > MaxValues {
		return fmt.Errorf("%w: %v for generator %d with %d values", ErrInvalid, kind, gen, len(vals))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.header(kind, gen, len(vals))
	var b [8]byte
	for _, v := range vals {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		f.w.Write(b[:])
	}
	// A frame bigger than the buffer is flushed part way by bufio; that is
	// fine, the reader reassembles it.
	return nil
}

// WriteText appends one frame of a text kind to the buffer. A text longer
// than MaxText bytes is cut (on a character boundary) and ends in "…".
func (f *Writer) WriteText(kind Kind, gen int, text string) error {
	if !kind.Text() || gen < 0 || gen > MaxGen {
		return fmt.Errorf("%w: %v for generator %d with text", ErrInvalid, kind, gen)
	}
	text = shorten(text)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.header(kind, gen, len(text))
	f.w.WriteString(text)
	return nil
}

// header writes a frame's header; f.mu is held.
func (f *Writer) header(kind Kind, gen, count int) {
	var h [HeaderSize]byte
	h[0] = byte(kind)
	binary.LittleEndian.PutUint16(h[1:], uint16(gen))
	binary.LittleEndian.PutUint32(h[3:], uint32(count))
	f.w.Write(h[:])
}

// Flush writes the buffered frames out. Once a flush has failed (the
// reader is gone), every later Write and Flush returns its error.
func (f *Writer) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = f.w.Flush()
	}
	return f.err
}

// shorten returns text cut to at most MaxText bytes, ending in "…" if it
// was cut.
func shorten(text string) string {
	if len(text) <= MaxText {
		return text
	}
	const more = "…"
	n := MaxText - len(more)
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + more
}

// Read reads frames from r until it ends and calls fn for each whole one.
// It returns nil at a clean end or a torn last frame (a killed holder's),
// and an error wrapping ErrMalformed for anything malformed (or the
// reader's error). f.Vals is valid only until fn returns: the next frame
// reuses it.
func Read(r io.Reader, fn func(f Frame)) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var h [HeaderSize]byte
	var vals []int64
	var raw []byte
	for {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil
			}
			return err
		}
		kind := Kind(h[0])
		if !kind.Known() {
			return fmt.Errorf("%w: unknown kind %d", ErrMalformed, h[0])
		}
		n := int(binary.LittleEndian.Uint32(h[3:]))
		size := 8 * n
		switch {
		case kind.Text() && n > MaxText:
			return fmt.Errorf("%w: %v frame of %d bytes exceeds %d", ErrMalformed, kind, n, MaxText)
		case kind.Text():
			size = n
		case n > MaxValues:
			return fmt.Errorf("%w: %v frame of %d values exceeds %d", ErrMalformed, kind, n, MaxValues)
		}
		if cap(raw) < size {
			raw = make([]byte, size)
		}
		raw = raw[:size]
		if _, err := io.ReadFull(br, raw); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil // torn by a kill: never acknowledged as a whole
			}
			return err
		}
		f := Frame{Kind: kind, Gen: int(binary.LittleEndian.Uint16(h[1:]))}
		if kind.Text() {
			f.Text = string(raw)
		} else {
			vals = vals[:0]
			for i := range n {
				vals = append(vals, int64(binary.LittleEndian.Uint64(raw[8*i:])))
			}
			f.Vals = vals
		}
		fn(f)
	}
}
