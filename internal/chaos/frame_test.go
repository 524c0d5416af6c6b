package chaos

import (
	"bytes"
	"slices"
	"testing"
)

func TestFramesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := newFrameWriter(&buf)
	w.write(frameReady, 0, nil)
	w.write(frameIDs, 3, []int64{1, 2, 1 << 62})
	w.write(frameStats, 1, []int64{7, -1, 99})
	w.flush()
	var got []frame
	if err := readFrames(bytes.NewReader(buf.Bytes()), func(f frame) {
		f.vals = slices.Clone(f.vals)
		got = append(got, f)
	}); err != nil {
		t.Fatal(err)
	}
	want := []frame{{frameReady, 0, []int64{}}, {frameIDs, 3, []int64{1, 2, 1 << 62}}, {frameStats, 1, []int64{7, -1, 99}}}
	if len(got) != len(want) {
		t.Fatalf("got %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].kind != want[i].kind || got[i].gen != want[i].gen || !slices.Equal(got[i].vals, want[i].vals) {
			t.Errorf("frame %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A holder killed mid-write leaves a torn frame: it is dropped, never read
// as IDs, and the frames before it all arrive.
func TestTornFrameIsDropped(t *testing.T) {
	var buf bytes.Buffer
	w := newFrameWriter(&buf)
	w.write(frameIDs, 0, []int64{10, 11})
	w.write(frameIDs, 0, []int64{12, 13, 14})
	w.flush()
	whole := buf.Bytes()
	for cut := len(whole) - 1; cut > frameHeader+16; cut-- {
		var ids []int64
		if err := readFrames(bytes.NewReader(whole[:cut]), func(f frame) { ids = append(ids, f.vals...) }); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if !slices.Equal(ids, []int64{10, 11}) {
			t.Fatalf("cut at %d: got %v, want the first frame only", cut, ids)
		}
	}
}

func TestBadFrames(t *testing.T) {
	for name, b := range map[string][]byte{
		"unknown kind": {9, 0, 0, 0, 0, 0, 0},
		"huge count":   {1, 0, 0, 0xff, 0xff, 0xff, 0x7f},
	} {
		if err := readFrames(bytes.NewReader(b), func(frame) {}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseIDs(t *testing.T) {
	got, err := parseIDs([]byte(`{"ids":["1","22","9223372036854775807"]}`), nil)
	if err != nil || !slices.Equal(got, []int64{1, 22, 9223372036854775807}) {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{``, `{"id":"1"}`, `{"ids":[1]}`, `{"ids":["1"`, `{"ids":["x"]}`, `{"ids":["12345678901234567890"]}`} {
		if _, err := parseIDs([]byte(bad), nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if c := errorCode([]byte(`{"error":{"code":"clock_backwards","message":"m"}}`)); c != "clock_backwards" {
		t.Errorf("errorCode = %q", c)
	}
}

func FuzzParseIDs(f *testing.F) {
	f.Add([]byte(`{"ids":["1","2"]}`))
	f.Add([]byte(`{"ids":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := parseIDs(b, nil)
		if err == nil {
			for _, id := range ids {
				if id < 0 {
					t.Fatalf("negative ID %d from %q", id, b)
				}
			}
		}
	})
}
