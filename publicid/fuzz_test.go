package publicid

import (
	"errors"
	"testing"
)

// FuzzParseRandom: whatever ParseRandom takes prints back as the same
// text (one text per ID), and whatever it refuses wraps ErrInvalid.
func FuzzParseRandom(f *testing.F) {
	for _, s := range []string{"order_01h455vb4pex5vsknk084sn02q", "01h455vb4pex5vsknk084sn02q", "a_b_7zzzzzzzzzzzzzzzzzzzzzzzzz", "order_8zzzzzzzzzzzzzzzzzzzzzzzzz", "_01h455vb4pex5vsknk084sn02q", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRandom(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseRandom(%q): %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		if got := r.String(); got != s {
			t.Fatalf("ParseRandom(%q) prints as %q", s, got)
		}
	})
}

// FuzzOpen: whatever Open takes seals back to the same text under its key
// (one text per ID), and every refusal is one of Open's errors.
func FuzzOpen(f *testing.F) {
	ks := testKeyset(f)
	for _, s := range []string{"order_25peqp0shbffmh4asf3fn5nb6zt", "order_15peqp0shbffmh4asf3fn5nb6zt", "order_05peqp0shbffmh4asf3fn5nb6zt", "order_01h455vb4pex5vsknk084sn02q", "_2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ks.Open(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrForged) && !errors.Is(err, ErrUnknownKey) && !errors.Is(err, ErrRetiredKey) {
				t.Fatalf("Open(%q): unexpected error %v", s, err)
			}
			return
		}
		if o.KeyVersion != "2" {
			t.Fatalf("Open(%q) = %+v opened under version %s, which sealed nothing here", s, o, o.KeyVersion)
		}
		if back, err := ks.Seal(o.Prefix, o.ID); err != nil || back != s {
			t.Fatalf("Open(%q) = %+v, which seals to %q, %v", s, o, back, err)
		}
	})
}
