package publicid

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
)

// Test keys: never used anywhere but here.
const (
	testKey1 = "000102030405060708090a0b0c0d0e0f"
	testKey2 = "8d2b4f6a1c0e3957b8a6d4c2e0f19b7a"
	testKey3 = "3f1c9a0e6b2d48e7a5c4f0b19d8e7a62"
)

func mustKeyset(t testing.TB, text string) *Keyset {
	t.Helper()
	ks, err := ParseKeyset([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// testKeyset has 2 primary, 1 decrypt-only and 0 retired.
func testKeyset(t testing.TB) *Keyset {
	return mustKeyset(t, `{"keys": {
		"2": {"status": "primary", "key": "`+testKey2+`"},
		"1": {"status": "decrypt-only", "key": "`+testKey1+`"},
		"0": {"status": "retired", "key": "`+testKey3+`"}}}`)
}

// exampleID is a v1 ID of 2026-09-26T12:00:00Z, machine 37, sequence 5.
const exampleID snowfence.ID = 97301141913751557

func TestSealRoundTrip(t *testing.T) {
	ks := testKeyset(t)
	rng := rand.New(rand.NewPCG(1, 2))
	ids := []snowfence.ID{0, 1, exampleID, math.MaxInt64}
	for range 1000 {
		ids = append(ids, snowfence.ID(rng.Int64()))
	}
	for _, prefix := range []string{"order", "a", "user_account", strings.Repeat("z", 63)} {
		for _, id := range ids {
			s, err := ks.Seal(prefix, id)
			if err != nil {
				t.Fatalf("Seal(%q, %d): %v", prefix, id, err)
			}
			if want := len(prefix) + 1 + 27; len(s) != want || !strings.HasPrefix(s, prefix+"_2") {
				t.Fatalf("Seal(%q, %d) = %q; want %d characters, %s_2…", prefix, id, s, want, prefix)
			}
			o, err := ks.Open(s)
			if err != nil || o != (Opened{Prefix: prefix, ID: id, KeyVersion: "2"}) {
				t.Fatalf("Open(%q) = %+v, %v; want %s, %d, version 2", s, o, err, prefix, id)
			}
			if _, err := ParseRandom(s); !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseRandom(sealed %q) = %v; want ErrInvalid", s, err)
			}
		}
	}
}

func TestSealRefuses(t *testing.T) {
	ks := testKeyset(t)
	for _, tt := range []struct {
		prefix string
		id     snowfence.ID
		want   error
	}{
		{"", 1, ErrInvalidPrefix},
		{"Order", 1, ErrInvalidPrefix},
		{"order_", 1, ErrInvalidPrefix},
		{strings.Repeat("a", 64), 1, ErrInvalidPrefix},
		{"order", -1, ErrNegativeID},
	} {
		if s, err := ks.Seal(tt.prefix, tt.id); !errors.Is(err, tt.want) {
			t.Errorf("Seal(%q, %d) = %q, %v; want %v", tt.prefix, tt.id, s, err, tt.want)
		}
	}
}

// TestOpenRandomRefused: a random public ID is not a sealed one.
func TestOpenRandomRefused(t *testing.T) {
	r, _ := NewRandom("order")
	if o, err := testKeyset(t).Open(r.String()); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open(random %s) = %+v, %v; want ErrInvalid", r, o, err)
	}
}

// TestOpenOneCharacterChanged changes each character of sealed IDs, at
// every position, to every other byte (the alphabet's other characters,
// upper case, '_', every other byte): every result is refused, none opens,
// to the same ID or another.
func TestOpenOneCharacterChanged(t *testing.T) {
	ks := testKeyset(t)
	rng := rand.New(rand.NewPCG(3, 4))
	tried := 0
	for n := range 40 {
		id := snowfence.ID(rng.Int64())
		prefix := []string{"order", "user_account"}[n%2]
		sealed, err := ks.Seal(prefix, id)
		if err != nil {
			t.Fatal(err)
		}
		s := []byte(sealed)
		for i := range s {
			orig := s[i]
			for c := range 256 {
				if byte(c) == orig {
					continue
				}
				s[i] = byte(c)
				tried++
				if o, err := ks.Open(string(s)); err == nil {
					t.Fatalf("%q (from %q, position %d) opens as %+v", s, sealed, i, o)
				}
			}
			s[i] = orig
		}
	}
	t.Logf("%d altered texts, all refused", tried)
}

// TestOpenByStatus: an ID sealed under a key now decrypt-only opens, under
// a retired key is refused, under a version not listed is unknown.
func TestOpenByStatus(t *testing.T) {
	older := mustKeyset(t, `{"keys": {"0": {"status": "primary", "key": "`+testKey3+`"}}}`)
	old := mustKeyset(t, `{"keys": {"1": {"status": "primary", "key": "`+testKey1+`"}}}`)
	other := mustKeyset(t, `{"keys": {"9": {"status": "primary", "key": "`+testKey2+`"}}}`)
	ks := testKeyset(t)
	seal := func(k *Keyset) string {
		s, err := k.Seal("order", exampleID)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	o, err := ks.Open(seal(old))
	if err != nil || o.ID != exampleID || o.KeyVersion != "1" {
		t.Errorf("decrypt-only: Open = %+v, %v; want %d under version 1", o, err, exampleID)
	}
	if _, err := ks.Open(seal(older)); !errors.Is(err, ErrRetiredKey) {
		t.Errorf("retired: Open = %v; want ErrRetiredKey", err)
	}
	if _, err := ks.Open(seal(other)); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown version: Open = %v; want ErrUnknownKey", err)
	}
	// Version 2's character on a block sealed under version 1's key.
	s := []byte(seal(old))
	s[len("order_")] = '2'
	if _, err := ks.Open(string(s)); !errors.Is(err, ErrForged) {
		t.Errorf("wrong key: Open = %v; want ErrForged", err)
	}
	// The type binds: an order's sealed ID does not open as a user's.
	if _, err := ks.Open("user" + seal(ks)[len("order"):]); !errors.Is(err, ErrForged) {
		t.Errorf("other type: Open = %v; want ErrForged", err)
	}
	if got := ks.Primary(); got != "2" {
		t.Errorf("Primary() = %q, want 2", got)
	}
	want := []KeyVersion{{"0", StatusRetired}, {"1", StatusDecryptOnly}, {"2", StatusPrimary}}
	if got := ks.Versions(); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("Versions() = %v, want %v", got, want)
	}
}

func TestOpenInvalid(t *testing.T) {
	ks := testKeyset(t)
	good, _ := ks.Seal("order", exampleID)
	suffix := good[len("order_"):]
	for _, s := range []string{
		"", "_", "order", "order_", suffix, "_" + suffix, "Order_" + suffix, "order__" + suffix,
		"order_" + suffix[1:], "order_" + suffix + "0", "order_" + strings.ToUpper(suffix),
		"order_2" + "8" + suffix[2:], // the block's first character above 7
		"order_i" + suffix[1:], "order-" + suffix, " order_" + suffix,
	} {
		if o, err := ks.Open(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("Open(%q) = %+v, %v; want ErrInvalid", s, o, err)
		}
	}
}

// TestSealedBitBalance seals 1,000,000 consecutive internal IDs and checks
// that each of the 128 bits of the encrypted block is set in ½ ± 1 % of
// them: sealed IDs of neighbouring rows show no pattern.
func TestSealedBitBalance(t *testing.T) {
	ks := testKeyset(t)
	const n = 1_000_000
	var ones [128]int
	var block [16]byte
	for i := range n {
		s, err := ks.Seal("order", exampleID+snowfence.ID(i))
		if err != nil {
			t.Fatal(err)
		}
		if !decodeBase32(s[len("order_")+1:], &block) {
			t.Fatalf("Seal gave %q", s)
		}
		for j, b := range block {
			for k := range 8 {
				ones[8*j+k] += int(b >> (7 - k) & 1)
			}
		}
	}
	for bit, c := range ones {
		if f := float64(c) / n; math.Abs(f-0.5) > 0.01 {
			t.Errorf("bit %d is set in %.4f of %d sealed IDs; want 0.5 ± 0.01", bit, f, n)
		}
	}
}

func TestOpenAllocs(t *testing.T) {
	ks := testKeyset(t)
	s, _ := ks.Seal("order", exampleID)
	buf := make([]byte, 0, 128)
	if a := testing.AllocsPerRun(100, func() { ks.Open(s) }); a != 0 {
		t.Errorf("Open allocates %v times; want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { ks.AppendSeal(buf[:0], "order", exampleID) }); a != 0 {
		t.Errorf("AppendSeal allocates %v times; want 0", a)
	}
}
