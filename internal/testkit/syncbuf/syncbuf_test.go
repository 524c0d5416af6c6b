package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

func TestBufferKeepsTheFirstLimitBytes(t *testing.T) {
	b := Buffer{Limit: 5}
	for _, s := range []string{"abc", "def", "ghi"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := b.String(); got != "abcde" {
		t.Errorf("got %q, want abcde", got)
	}
	var u Buffer
	u.Write([]byte(strings.Repeat("x", 1000)))
	if len(u.String()) != 1000 {
		t.Errorf("unbounded buffer kept %d bytes", len(u.String()))
	}
}

func TestTailKeepsTheLastLimitBytes(t *testing.T) {
	tl := Tail{Limit: 5}
	for _, s := range []string{"abc", "def", "ghi"} {
		if n, err := tl.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := tl.String(); got != "efghi" {
		t.Errorf("got %q, want efghi", got)
	}
	cut := Tail{Limit: 2}
	cut.Write([]byte("aé!")) // é is two bytes: the cut leaves half of it
	if got := cut.String(); got != "?!" {
		t.Errorf("got %q, want ?!", got)
	}
}

func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	tl := Tail{Limit: 1 << 20}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("0123456789"))
				tl.Write([]byte("0123456789"))
				_ = b.String() + tl.String()
			}
		})
	}
	wg.Wait()
	if len(b.String()) != 8000 || len(tl.String()) != 8000 {
		t.Errorf("kept %d and %d bytes, want 8000", len(b.String()), len(tl.String()))
	}
}
