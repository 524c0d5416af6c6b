package snowfence_test

import (
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snowfence/snowfence"
)

func TestParseUUID(t *testing.T) {
	const canon = "0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f"
	want := snowfence.UUID{0x01, 0x99, 0xa4, 0xf0, 0x6c, 0x10, 0x7a, 0x3b, 0x8f, 0x2e, 0x5d, 0x1c, 0x0b, 0x9a, 0x8e, 0x7f}
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"canonical", canon, true},
		{"upper case", strings.ToUpper(canon), true},
		{"mixed case", "0199A4f0-6C10-7a3B-8f2e-5D1c0b9a8e7F", true},
		{"braces", "{" + canon + "}", false},
		{"urn", "urn:uuid:" + canon, false},
		{"no hyphens", strings.ReplaceAll(canon, "-", ""), false},
		{"hyphen moved", "0199a4f-06c10-7a3b-8f2e-5d1c0b9a8e7f", false},
		{"space", " " + canon[1:], false},
		{"trailing", canon + " ", false},
		{"non-hex", "0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7g", false},
		{"underscore for hyphen", "0199a4f0_6c10-7a3b-8f2e-5d1c0b9a8e7f", false},
		{"empty", "", false},
		{"plus sign", "+199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := snowfence.ParseUUID(tc.in)
			if !tc.ok {
				if err == nil || !errors.Is(err, snowfence.ErrInvalidUUID) {
					t.Fatalf("ParseUUID(%q) = %v, %v; want an error matching ErrInvalidUUID", tc.in, got, err)
				}
				if !strings.HasPrefix(err.Error(), "snowfence: ") {
					t.Errorf("error %q lacks the snowfence: prefix", err)
				}
				return
			}
			if err != nil || got != want {
				t.Fatalf("ParseUUID(%q) = %v, %v; want %v", tc.in, got, err, want)
			}
			if got.String() != canon {
				t.Errorf("String() = %q, want %q", got.String(), canon)
			}
		})
	}
}

func TestUUIDVersionVariant(t *testing.T) {
	for _, tc := range []struct {
		in      string
		version int
		variant snowfence.UUIDVariant
	}{
		{"00000000-0000-0000-0000-000000000000", 0, snowfence.VariantNCS},
		{"ffffffff-ffff-ffff-ffff-ffffffffffff", 15, snowfence.VariantFuture},
		{"0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f", 7, snowfence.VariantRFC9562},
		{"0199a4f0-6c10-4a3b-bf2e-5d1c0b9a8e7f", 4, snowfence.VariantRFC9562},
		{"0199a4f0-6c10-1a3b-cf2e-5d1c0b9a8e7f", 1, snowfence.VariantMicrosoft},
		{"0199a4f0-6c10-8a3b-7f2e-5d1c0b9a8e7f", 8, snowfence.VariantNCS},
	} {
		u := snowfence.MustParseUUID(tc.in)
		if u.Version() != tc.version || u.Variant() != tc.variant {
			t.Errorf("%s: version %d variant %s; want %d %s", tc.in, u.Version(), u.Variant(), tc.version, tc.variant)
		}
		g, _ := uuid.Parse(tc.in)
		if int(g.Version()) != u.Version() {
			t.Errorf("%s: google/uuid says version %d, we say %d", tc.in, g.Version(), u.Version())
		}
	}
}

func TestUUIDTimeOnlyForTimedForms(t *testing.T) {
	v7 := snowfence.MustParseUUID("0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f")
	got, ok := v7.Time()
	if want := time.UnixMilli(0x0199a4f06c10).UTC(); !ok || !got.Equal(want) {
		t.Errorf("v7 Time() = %v, %v; want %v, true", got, ok, want)
	}
	for _, s := range []string{
		"0199a4f0-6c10-4a3b-8f2e-5d1c0b9a8e7f", // v4
		"0199a4f0-6c10-7a3b-cf2e-5d1c0b9a8e7f", // v7 bits, Microsoft variant
		"0199a4f0-6c10-8a3b-8f2e-5d1c0b9a8e7f", // v8, not ours (check bits)
	} {
		if tm, ok := snowfence.MustParseUUID(s).Time(); ok {
			t.Errorf("%s: Time() = %v, true; want false", s, tm)
		}
	}
}

func TestUUIDTextJSONSQL(t *testing.T) {
	u := snowfence.MustParseUUID("0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f")
	b, err := json.Marshal(struct{ U snowfence.UUID }{u})
	if err != nil || string(b) != `{"U":"0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f"}` {
		t.Fatalf("JSON = %s, %v", b, err)
	}
	var back struct{ U snowfence.UUID }
	if err := json.Unmarshal(b, &back); err != nil || back.U != u {
		t.Fatalf("JSON round trip: %v, %v", back.U, err)
	}
	if err := json.Unmarshal([]byte(`{"U":"{0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f}"}`), &back); !errors.Is(err, snowfence.ErrInvalidUUID) {
		t.Errorf("JSON with braces: %v, want ErrInvalidUUID", err)
	}
	var _ driver.Valuer = u
	var _ sql.Scanner = &u
	v, err := u.Value()
	if err != nil || v != u.String() {
		t.Errorf("Value() = %v, %v", v, err)
	}
	for _, src := range []any{u.String(), []byte(u.String()), u[:], strings.ToUpper(u.String())} {
		var got snowfence.UUID
		if err := got.Scan(src); err != nil || got != u {
			t.Errorf("Scan(%T %v) = %v, %v", src, src, got, err)
		}
	}
	for _, src := range []any{nil, int64(3), u[:15], []byte("not a uuid"), "x"} {
		var got snowfence.UUID
		if err := got.Scan(src); !errors.Is(err, snowfence.ErrInvalidUUID) {
			t.Errorf("Scan(%T %v) = %v, want ErrInvalidUUID", src, src, err)
		}
	}
	var n sql.Null[snowfence.UUID]
	if err := n.Scan(nil); err != nil || n.Valid {
		t.Errorf("sql.Null Scan(nil) = %v, valid %v", err, n.Valid)
	}
}

// Ours parses google/uuid's values, of every version it makes, and
// google/uuid parses ours.
func TestUUIDInteropGoogle(t *testing.T) {
	makers := map[string]func() (uuid.UUID, error){
		"v1": uuid.NewUUID, "v4": uuid.NewRandom, "v6": uuid.NewV6, "v7": uuid.NewV7,
	}
	for name, mk := range makers {
		for range 100 {
			g, err := mk()
			if err != nil {
				t.Fatal(err)
			}
			u, err := snowfence.ParseUUID(g.String())
			if err != nil || [16]byte(u) != [16]byte(g) {
				t.Fatalf("%s %s: ParseUUID = %v, %v", name, g, u, err)
			}
			if u.Version() != int(g.Version()) || u.Variant() != snowfence.VariantRFC9562 {
				t.Fatalf("%s %s: version %d variant %s", name, g, u.Version(), u.Variant())
			}
			if name == "v7" {
				sec, nsec := g.Time().UnixTime()
				tm, ok := u.Time()
				if !ok || tm.UnixMilli() != time.Unix(sec, nsec).UnixMilli() {
					t.Fatalf("v7 %s: Time() = %v, %v; google/uuid says %v", g, tm, ok, time.Unix(sec, nsec))
				}
			}
			back, err := uuid.Parse(u.String())
			if err != nil || back != g {
				t.Fatalf("%s: google/uuid parses our %s as %v, %v", name, u, back, err)
			}
		}
	}
}

// FuzzParseUUID checks that ParseUUID accepts exactly the 8-4-4-4-12
// hexadecimal forms (either case), that what it accepts round-trips to the
// lower-case form and agrees with google/uuid's reading of it, and that it
// never panics.
func FuzzParseUUID(f *testing.F) {
	for _, s := range []string{
		"0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f", "0199A4F0-6C10-7A3B-8F2E-5D1C0B9A8E7F",
		"{0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f}", "urn:uuid:0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f",
		"0199a4f06c107a3b8f2e5d1c0b9a8e7f", "00000000-0000-0000-0000-000000000000", "", "-",
		"0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7", "0199a4f0+6c10-7a3b-8f2e-5d1c0b9a8e7f",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := snowfence.ParseUUID(s)
		canonical := len(s) == 36
		for i := 0; i < len(s) && canonical; i++ {
			c := s[i]
			if i == 8 || i == 13 || i == 18 || i == 23 {
				canonical = c == '-'
				continue
			}
			canonical = '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
		}
		if (err == nil) != canonical {
			t.Fatalf("ParseUUID(%q) err = %v, but 8-4-4-4-12 hex = %v", s, err, canonical)
		}
		if err != nil {
			if !errors.Is(err, snowfence.ErrInvalidUUID) {
				t.Fatalf("ParseUUID(%q): %v does not match ErrInvalidUUID", s, err)
			}
			return
		}
		if u.String() != strings.ToLower(s) {
			t.Fatalf("ParseUUID(%q).String() = %q", s, u.String())
		}
		g, gerr := uuid.Parse(s)
		if gerr != nil || [16]byte(g) != [16]byte(u) {
			t.Fatalf("google/uuid reads %q as %v, %v; we read %v", s, g, gerr, u)
		}
		var back snowfence.UUID
		if err := back.UnmarshalText([]byte(u.String())); err != nil || back != u {
			t.Fatalf("text round trip of %s: %v, %v", u, back, err)
		}
	})
}
