package snowfence_test

import (
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

var _ interface {
	sql.Scanner
	driver.Valuer
} = (*snowfence.ID)(nil)

func TestParseID(t *testing.T) {
	good := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"7", 7},
		{"97301141913751557", 97301141913751557},
		{"9223372036854775807", 1<<63 - 1},
	}
	for _, g := range good {
		got, err := snowfence.ParseID(g.in)
		if err != nil || int64(got) != g.want {
			t.Errorf("ParseID(%q) = %d, %v; want %d", g.in, got, err, g.want)
		}
	}
	bad := []struct{ in, reason string }{
		{"", "empty"},
		{"-1", "not a decimal digit"},
		{"+1", "not a decimal digit"},
		{" 1", "not a decimal digit"},
		{"1 ", "not a decimal digit"},
		{"1_000", "not a decimal digit"},
		{"0x10", "leading zero"}, {"1x10", "not a decimal digit"},
		{"1e9", "not a decimal digit"},
		{"١٢", "not a decimal digit"},
		{"007", "leading zero"},
		{"9223372036854775808", "larger than"},
		{"18446744073709551615", "more than 19"},
		{"99999999999999999999999", "more than 19"},
	}
	for _, b := range bad {
		_, err := snowfence.ParseID(b.in)
		if !errors.Is(err, snowfence.ErrInvalidID) {
			t.Errorf("ParseID(%q) err = %v, want ErrInvalidID", b.in, err)
			continue
		}
		var pe *snowfence.ParseError
		if !errors.As(err, &pe) || !strings.Contains(pe.Reason, b.reason) {
			t.Errorf("ParseID(%q) err = %v, want reason containing %q", b.in, err, b.reason)
		}
	}
}

func TestIDJSONIsString(t *testing.T) {
	type row struct {
		ID snowfence.ID `json:"id"`
	}
	b, err := json.Marshal(row{ID: 97301141913751557})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"id":"97301141913751557"}`; got != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
	var back row
	if err := json.Unmarshal(b, &back); err != nil || back.ID != 97301141913751557 {
		t.Fatalf("Unmarshal = %d, %v", back.ID, err)
	}
	for _, in := range []string{`{"id":97301141913751557}`, `{"id":"-5"}`, `{"id":""}`} {
		if err := json.Unmarshal([]byte(in), &back); err == nil {
			t.Errorf("Unmarshal(%s) accepted", in)
		}
	}
}

func TestIDSQL(t *testing.T) {
	var id snowfence.ID
	for _, src := range []any{int64(97301141913751557), []byte("97301141913751557"), "97301141913751557"} {
		id = 0
		if err := id.Scan(src); err != nil || id != 97301141913751557 {
			t.Errorf("Scan(%T) = %d, %v", src, id, err)
		}
	}
	for _, src := range []any{int64(-1), nil, 3.5, "x"} {
		if err := id.Scan(src); !errors.Is(err, snowfence.ErrInvalidID) {
			t.Errorf("Scan(%#v) err = %v, want ErrInvalidID", src, err)
		}
	}
	v, err := snowfence.ID(42).Value()
	if err != nil || v != int64(42) {
		t.Errorf("Value = %#v, %v", v, err)
	}
}

func TestDecodedJSON(t *testing.T) {
	d, err := snowfence.Decode(snowfence.MustParseID("97301141913751557"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(d)
	want := `{"id":"97301141913751557","layout":"v1","created_at":"2026-09-26T12:00:00.000Z","region":"0","region_number":0,"machine":37,"sequence":5}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
	if _, err := snowfence.Decode(-1); !errors.Is(err, snowfence.ErrInvalidID) {
		t.Errorf("Decode(-1) err = %v", err)
	}
}

// FuzzParseID checks that ParseID accepts exactly the canonical decimal forms
// of non-negative int64 values, and that accepted IDs round-trip through
// String, text and JSON, and decode without error.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"0", "97301141913751557", "683244571854022659", "9223372036854775807", "9223372036854775808", "-1", "007", " 1", "", "1e3"} {
		f.Add(s)
	}
	sched, _ := snowfence.ParseSchedule("v1,v2@2028-01-01T00:00:00Z")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := snowfence.ParseID(s)
		v, serr := strconv.ParseInt(s, 10, 64)
		canonical := serr == nil && v >= 0 && strconv.FormatInt(v, 10) == s
		if (err == nil) != canonical {
			t.Fatalf("ParseID(%q) err = %v, but canonical = %v", s, err, canonical)
		}
		if err != nil {
			if !errors.Is(err, snowfence.ErrInvalidID) {
				t.Fatalf("ParseID(%q) error %v does not match ErrInvalidID", s, err)
			}
			return
		}
		if id.String() != s || int64(id) != v {
			t.Fatalf("round trip %q -> %d -> %q", s, id, id.String())
		}
		b, _ := json.Marshal(id)
		var back snowfence.ID
		if err := json.Unmarshal(b, &back); err != nil || back != id {
			t.Fatalf("JSON round trip of %s: %d, %v", b, back, err)
		}
		d, err := sched.Decode(id)
		if err != nil {
			t.Fatalf("Decode(%d): %v", id, err)
		}
		l := snowfence.V1()
		if d.Layout == "v2" {
			l = snowfence.V2()
		}
		again, err := l.ComposeAt(d.CreatedAt, d.RegionNumber, d.Machine, d.Sequence)
		if err != nil || again != id {
			t.Fatalf("Decode(%d) = %+v recomposes to %d, %v", id, d, again, err)
		}
	})
}

// names is a region registry of one region, number 2, for DecodeNamed.
func names(n int) (string, bool) {
	if n == 2 {
		return "eu-west-1", true
	}
	return "", false
}

// TestDecodeNamed decodes the worked v2 example with region names, to the
// exact bytes the decode endpoint returns, and a number the registry does
// not know to an empty name with a warning.
func TestDecodeNamed(t *testing.T) {
	sched := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()},
		snowfence.Step{From: time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC), Layout: snowfence.V2()})
	at := time.Date(2031, 3, 1, 9, 30, 0, 0, time.UTC)
	mk := func(region int) snowfence.ID {
		t.Helper()
		id, err := snowfence.V2().ComposeAt(at, region, 170, 3)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, c := range []struct {
		name   string
		id     snowfence.ID
		byName func(int) (string, bool)
		want   string
	}{
		{"registered", mk(2), names,
			`{"id":"683244571854022659","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"eu-west-1","region_number":2,"machine":170,"sequence":3}`},
		{"unregistered", mk(5), names,
			`{"id":"683244571855595523","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"","region_number":5,"machine":170,"sequence":3,"warning":"region number 5 is not in the region registry"}`},
		{"v1 carries no region", snowfence.MustParseID("97301141913751557"), names,
			`{"id":"97301141913751557","layout":"v1","created_at":"2026-09-26T12:00:00.000Z","region":"0","region_number":0,"machine":37,"sequence":5}`},
		{"no registry", mk(2), nil,
			`{"id":"683244571854022659","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"2","region_number":2,"machine":170,"sequence":3}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := sched.DecodeNamed(c.id, c.byName)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Errorf("JSON = %s\nwant   %s", b, c.want)
			}
			var back snowfence.Decoded
			if err := json.Unmarshal(b, &back); err != nil || back != d {
				t.Errorf("JSON read back = %+v, %v; want %+v", back, err, d)
			}
		})
	}
	if _, err := sched.DecodeNamed(-1, names); !errors.Is(err, snowfence.ErrInvalidID) {
		t.Errorf("DecodeNamed(-1) err = %v", err)
	}
}
