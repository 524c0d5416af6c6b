package chaos

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// A library holder streams what it does to the harness on its standard
// output as frames: a 7-byte header — kind, generator index (uint16), count
// (uint32), little-endian — and count int64 values. A frame is written
// whole under a lock and flushed at least every flushEvery, so the harness
// sees every ID a killed holder had acknowledged except the last few
// milliseconds', and never a torn one: a partial frame at the end of a
// killed holder's stream is discarded, not read as IDs.
const (
	// frameIDs carries IDs in the order the generator issued them.
	frameIDs byte = 1
	// frameStats carries cumulative counters: refused calls, the machine
	// number held (−1 for none), IDs issued.
	frameStats byte = 2
	// frameAck acknowledges a control command: the value is its sequence
	// number.
	frameAck byte = 3
	// frameReady says every generator of the process has its first lease.
	frameReady byte = 4
)

const frameHeader = 7

// maxFrameValues bounds a frame's count, so a corrupt header cannot make
// the reader allocate without bound.
const maxFrameValues = 1 << 20

// frameWriter writes frames to a holder's standard output; it is safe for
// concurrent use by the holder's generators.
type frameWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{w: bufio.NewWriterSize(w, 256<<10)}
}

// write appends one frame to the buffer.
func (f *frameWriter) write(kind byte, gen int, vals []int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	var h [frameHeader]byte
	h[0] = kind
	binary.LittleEndian.PutUint16(h[1:], uint16(gen))
	binary.LittleEndian.PutUint32(h[3:], uint32(len(vals)))
	f.w.Write(h[:])
	var b [8]byte
	for _, v := range vals {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		f.w.Write(b[:])
	}
	// A frame bigger than the buffer is flushed part way by bufio; that is
	// fine, the reader reassembles it.
	return nil
}

// flush writes the buffered frames out.
func (f *frameWriter) flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = f.w.Flush()
	}
	return f.err
}

// A frame is one decoded frame.
type frame struct {
	kind byte
	gen  int
	vals []int64
}

// readFrames reads frames from r until it ends and calls fn for each whole
// one. It returns nil at a clean end or a torn last frame (a killed
// holder), and an error for anything malformed.
func readFrames(r io.Reader, fn func(frame)) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var h [frameHeader]byte
	var vals []int64
	var raw []byte
	for {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil
			}
			return err
		}
		kind := h[0]
		if kind < frameIDs || kind > frameReady {
			return fmt.Errorf("chaos: holder stream: unknown frame kind %d", kind)
		}
		n := int(binary.LittleEndian.Uint32(h[3:]))
		if n > maxFrameValues {
			return fmt.Errorf("chaos: holder stream: frame of %d values exceeds %d", n, maxFrameValues)
		}
		if cap(raw) < 8*n {
			raw = make([]byte, 8*n)
		}
		raw = raw[:8*n]
		if _, err := io.ReadFull(br, raw); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return nil // torn by a kill: never acknowledged as a whole
			}
			return err
		}
		vals = vals[:0]
		for i := range n {
			vals = append(vals, int64(binary.LittleEndian.Uint64(raw[8*i:])))
		}
		fn(frame{kind: kind, gen: int(binary.LittleEndian.Uint16(h[1:])), vals: vals})
	}
}
