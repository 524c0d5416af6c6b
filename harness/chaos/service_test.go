package chaos

import (
	"slices"
	"testing"
)

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
