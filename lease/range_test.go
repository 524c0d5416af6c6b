package lease_test

import (
	"errors"
	"testing"

	"github.com/snowfence/snowfence/lease"
)

func TestParseRange(t *testing.T) {
	for in, want := range map[string]lease.Range{"0-63": {0, 63}, "64-1023": {64, 1023}, "7": {7, 7}, "0": {0, 0}} {
		if got, err := lease.ParseRange(in); err != nil || got != want {
			t.Errorf("ParseRange(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", "a-b", "5-", "-5", "1-2-3", " 1-2", "1 ", "0x10"} {
		if _, err := lease.ParseRange(in); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("ParseRange(%q) err = %v, want ErrInvalid", in, err)
		}
	}
}

// FuzzParseRange: the parser never panics, and what it accepts prints back
// to itself.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"0-63", "7", "5-3", "-1", "1-2-3", "99999999999999999999-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := lease.ParseRange(s)
		if err != nil {
			return
		}
		again, err := lease.ParseRange(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseRange(%q) = %v prints as %q, which reads back as %v, %v", s, r, r.String(), again, err)
		}
	})
}
