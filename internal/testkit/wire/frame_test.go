package wire

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// decode reads every frame of b, keeping copies.
func decode(t testing.TB, b []byte) []Frame {
	t.Helper()
	var got []Frame
	if err := Read(bytes.NewReader(b), func(f Frame) {
		f.Vals = slices.Clone(f.Vals)
		got = append(got, f)
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func equal(a, b Frame) bool {
	return a.Kind == b.Kind && a.Gen == b.Gen && slices.Equal(a.Vals, b.Vals) && a.Text == b.Text
}

func TestFramesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Write(KindReady, 0, nil)
	w.Write(KindIDs, 3, []int64{1, 2, 1 << 62})
	w.Write(KindStats, 1, []int64{7, -1, 99})
	w.WriteText(KindFenced, 2, "snowfence: fenced\nsecond line")
	w.WriteText(KindEcho, 0, "")
	w.Write(KindClaimed, MaxGen, []int64{17, 8})
	w.Flush()
	got := decode(t, buf.Bytes())
	want := []Frame{{KindReady, 0, nil, ""}, {KindIDs, 3, []int64{1, 2, 1 << 62}, ""}, {KindStats, 1, []int64{7, -1, 99}, ""},
		{KindFenced, 2, nil, "snowfence: fenced\nsecond line"}, {KindEcho, 0, nil, ""}, {KindClaimed, MaxGen, []int64{17, 8}, ""}}
	if len(got) != len(want) {
		t.Fatalf("got %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if !equal(got[i], want[i]) {
			t.Errorf("frame %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A holder killed mid-write leaves a torn frame: it is dropped, never read
// as IDs, and the frames before it all arrive.
func TestTornFrameIsDropped(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Write(KindIDs, 0, []int64{10, 11})
	w.Write(KindIDs, 0, []int64{12, 13, 14})
	w.Flush()
	whole := buf.Bytes()
	for cut := len(whole) - 1; cut > HeaderSize+16; cut-- {
		var ids []int64
		if err := Read(bytes.NewReader(whole[:cut]), func(f Frame) { ids = append(ids, f.Vals...) }); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if !slices.Equal(ids, []int64{10, 11}) {
			t.Fatalf("cut at %d: got %v, want the first frame only", cut, ids)
		}
	}
}

func TestBadFrames(t *testing.T) {
	for name, b := range map[string][]byte{
		"kind zero":     {0, 0, 0, 0, 0, 0, 0},
		"unknown kind":  {11, 0, 0, 0, 0, 0, 0},
		"huge count":    {1, 0, 0, 0xff, 0xff, 0xff, 0x7f},
		"values 2^20+1": {2, 0, 0, 1, 0, 0x10, 0},
		"long text":     {byte(KindFatal), 0, 0, 0x01, 0x10, 0, 0},
	} {
		err := Read(bytes.NewReader(b), func(Frame) { t.Errorf("%s: a frame was read", name) })
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

func TestWriterRefusesInvalidFrames(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for name, err := range map[string]error{
		"unknown kind":       w.Write(Kind(42), 0, nil),
		"text kind, values":  w.Write(KindFatal, 0, []int64{1}),
		"values kind, text":  w.WriteText(KindIDs, 0, "1"),
		"negative generator": w.Write(KindIDs, -1, nil),
		"generator too high": w.WriteText(KindEcho, MaxGen+1, "x"),
		"too many values":    w.Write(KindIDs, 0, make([]int64, MaxValues+1)),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	w.Flush()
	if buf.Len() != 0 {
		t.Errorf("refused frames wrote %d bytes", buf.Len())
	}
}

// A text longer than MaxText arrives cut on a character boundary, marked.
func TestLongTextIsShortened(t *testing.T) {
	for _, text := range []string{strings.Repeat("x", MaxText+1), strings.Repeat("é", MaxText)} {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		w.WriteText(KindFatal, 0, text)
		w.Flush()
		got := decode(t, buf.Bytes())
		if len(got) != 1 {
			t.Fatalf("got %d frames, want 1", len(got))
		}
		s := got[0].Text
		if len(s) > MaxText || !utf8.ValidString(s) || !strings.HasSuffix(s, "…") || !strings.HasPrefix(text, strings.TrimSuffix(s, "…")) {
			t.Errorf("%d-byte text arrived as %d bytes %q…", len(text), len(s), s[:min(len(s), 20)])
		}
	}
}

func TestFrameString(t *testing.T) {
	for _, tc := range []struct {
		f    Frame
		want string
	}{
		{Frame{Kind: KindIDs, Gen: 0, Vals: []int64{17, 18}}, "ids 0 17 18"},
		{Frame{Kind: KindReady}, "ready 0"},
		{Frame{Kind: KindFenced, Gen: 1, Text: "snowfence: fenced\nby the lease"}, "fenced 1 snowfence: fenced by the lease"},
		{Frame{Kind: KindEcho, Text: "resumed"}, "echo 0 resumed"},
		{Frame{Kind: Kind(99)}, "kind(99) 0"},
	} {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.f, got, tc.want)
		}
	}
}

// FuzzRead feeds Read any bytes: it must not panic, must accept only known
// kinds within their bounds, and the frames it returns must encode back to
// the bytes they came from (a torn tail aside).
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Write(KindIDs, 3, []int64{1, 2, 1 << 62})
	w.Write(KindReady, 0, nil)
	w.WriteText(KindRefused, 1, "snowfence: no lease")
	w.Flush()
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:buf.Len()-3])
	f.Add([]byte{byte(KindFatal), 0, 0, 2, 0, 0, 0, 'o', 'k'})
	f.Add([]byte{1, 0, 0, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []Frame
		err := Read(bytes.NewReader(b), func(fr Frame) {
			fr.Vals = slices.Clone(fr.Vals)
			got = append(got, fr)
		})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
		var re bytes.Buffer
		w := NewWriter(&re)
		for _, fr := range got {
			if !fr.Kind.Known() || fr.Gen < 0 || fr.Gen > MaxGen {
				t.Fatalf("frame %+v: unknown kind or generator out of range", fr)
			}
			var err error
			if fr.Kind.Text() {
				if len(fr.Vals) != 0 || len(fr.Text) > MaxText {
					t.Fatalf("text frame %+v: values, or text over %d bytes", fr, MaxText)
				}
				err = w.WriteText(fr.Kind, fr.Gen, fr.Text)
			} else {
				if fr.Text != "" || len(fr.Vals) > MaxValues {
					t.Fatalf("values frame %+v: text, or over %d values", fr, MaxValues)
				}
				err = w.Write(fr.Kind, fr.Gen, fr.Vals)
			}
			if err != nil {
				t.Fatalf("re-encoding %+v: %v", fr, err)
			}
		}
		w.Flush()
		if !bytes.HasPrefix(b, re.Bytes()) {
			t.Fatalf("frames %v re-encode to %x, not a prefix of the input %x", got, re.Bytes(), b)
		}
	})
}
