// Package syncbuf holds the buffers the tests and the chaos suite give a
// child process as its output: safe for the copier's writes and the
// reader's String at once, bounded so a chatty child cannot grow them
// without end, and always reporting a write as complete so a full buffer
// never stalls the child.
package syncbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer keeps what is written to it; with Limit > 0, only the first Limit
// bytes. The zero value is ready to use.
type Buffer struct {
	Limit int
	mu    sync.Mutex
	b     bytes.Buffer
}

// Write appends p, up to Limit.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Limit > 0 && s.b.Len()+len(p) > s.Limit {
		s.b.Write(p[:max(0, s.Limit-s.b.Len())])
		return len(p), nil
	}
	return s.b.Write(p)
}

// String returns what was kept.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Tail keeps the last Limit bytes written to it (all of them with Limit 0):
// where a crashed child's last words are.
type Tail struct {
	Limit int
	mu    sync.Mutex
	b     []byte
}

// Write appends p, dropping the oldest bytes beyond Limit.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.Limit; t.Limit > 0 && over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String returns the kept bytes; a character cut at the start shows as "?".
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.b), "?")
}
