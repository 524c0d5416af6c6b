package publicid

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
	"strings"
	"testing"
)

// typeIDVector is one entry of testdata/typeid/valid.json or invalid.json.
type typeIDVector struct {
	Name        string `json:"name"`
	TypeID      string `json:"typeid"`
	Prefix      string `json:"prefix"`
	UUID        string `json:"uuid"`
	Description string `json:"description"`
}

func readVectors(t *testing.T, file string) []typeIDVector {
	t.Helper()
	b, err := os.ReadFile("testdata/typeid/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var vs []typeIDVector
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&vs); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(vs) == 0 {
		t.Fatalf("%s holds no vectors", file)
	}
	return vs
}

// TestTypeIDValidVectors: every published valid TypeID parses, its prefix
// is the listed one, its suffix decodes to the listed UUID's 16 bytes, and
// it prints back as the same text.
func TestTypeIDValidVectors(t *testing.T) {
	for _, v := range readVectors(t, "valid.json") {
		t.Run(v.Name, func(t *testing.T) {
			r, err := ParseRandom(v.TypeID)
			if err != nil {
				t.Fatalf("ParseRandom(%q): %v", v.TypeID, err)
			}
			want, err := hex.DecodeString(strings.ReplaceAll(v.UUID, "-", ""))
			if err != nil || len(want) != 16 {
				t.Fatalf("vector UUID %q: %v", v.UUID, err)
			}
			if got := r.Bits(); !bytes.Equal(got[:], want) {
				t.Errorf("bits %x, want %x", got, want)
			}
			if r.Prefix() != v.Prefix {
				t.Errorf("prefix %q, want %q", r.Prefix(), v.Prefix)
			}
			if s := r.String(); s != v.TypeID {
				t.Errorf("String() = %q, want %q", s, v.TypeID)
			}
			back, err := RandomFromBits(v.Prefix, [16]byte(want))
			if err != nil || back != r {
				t.Errorf("RandomFromBits = %v, %v; want %v", back, err, r)
			}
		})
	}
}

// TestTypeIDInvalidVectors: every published invalid TypeID is refused
// with ErrInvalid.
func TestTypeIDInvalidVectors(t *testing.T) {
	for _, v := range readVectors(t, "invalid.json") {
		t.Run(v.Name, func(t *testing.T) {
			r, err := ParseRandom(v.TypeID)
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseRandom(%q) = %v, %v; want ErrInvalid (%s)", v.TypeID, r, err, v.Description)
			}
		})
	}
}

func TestNewRandomPrefix(t *testing.T) {
	tests := []struct {
		prefix string
		ok     bool
	}{
		{"order", true},
		{"", true},
		{"a", true},
		{"my__type", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"Order", false},
		{"_order", false},
		{"order_", false},
		{"or-der", false},
		{"order1", false},
		{"ordér", false},
	}
	for _, tt := range tests {
		r, err := NewRandom(tt.prefix)
		if tt.ok != (err == nil) || !tt.ok && !errors.Is(err, ErrInvalidPrefix) {
			t.Errorf("NewRandom(%q) = %v, %v; want ok %v", tt.prefix, r, err, tt.ok)
			continue
		}
		if !tt.ok {
			continue
		}
		s := r.String()
		want := len(tt.prefix) + 1 + suffixLen
		if tt.prefix == "" {
			want = suffixLen
		}
		if len(s) != want || s[len(s)-suffixLen] > '7' {
			t.Errorf("NewRandom(%q) = %q: length %d (want %d) or first suffix character above 7", tt.prefix, s, len(s), want)
		}
		back, err := ParseRandom(s)
		if err != nil || back != r {
			t.Errorf("ParseRandom(%q) = %v, %v; want %v", s, back, err, r)
		}
	}
}

func TestRandomText(t *testing.T) {
	r, err := NewRandom("order")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]Random{"pid": r})
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]Random
	if err := json.Unmarshal(b, &back); err != nil || back["pid"] != r {
		t.Errorf("JSON round trip of %s = %s → %v, %v", r, b, back, err)
	}
	var bad Random
	if err := bad.UnmarshalText([]byte("order_8zzzzzzzzzzzzzzzzzzzzzzzzz")); !errors.Is(err, ErrInvalid) {
		t.Errorf("UnmarshalText of an overflowing suffix: %v, want ErrInvalid", err)
	}
}

// TestRandomCanonical: every character of a random ID's suffix, changed to
// any other byte, is refused or reads back as different bits (base32
// maps each text to one value and back); never the same ID under two
// texts.
func TestRandomCanonical(t *testing.T) {
	for range 20 {
		r, _ := NewRandom("order")
		s := []byte(r.String())
		for i := len("order_"); i < len(s); i++ {
			orig := s[i]
			for c := range 256 {
				if byte(c) == orig {
					continue
				}
				s[i] = byte(c)
				if got, err := ParseRandom(string(s)); err == nil && got == r {
					t.Fatalf("%q parses to the same ID as %q", s, r)
				}
			}
			s[i] = orig
		}
	}
}

// randomCount is how many random IDs TestRandomNoRepeats makes.
const randomCount = 10_000_000

// TestRandomNoRepeats makes 10,000,000 random IDs and checks that no two
// are equal, by sorting their bits (160 MB, freed after). The first
// 1,000,000 also go through TestRandomIndependence's checks.
func TestRandomNoRepeats(t *testing.T) {
	all := make([][2]uint64, randomCount)
	for i := range all {
		r, err := NewRandom("order")
		if err != nil {
			t.Fatal(err)
		}
		all[i] = halves(r.Bits())
	}
	for _, f := range independence(all[:1_000_000]) {
		t.Error(f)
	}
	slices.SortFunc(all, func(a, b [2]uint64) int {
		switch {
		case a[0] != b[0]:
			return cmpU(a[0], b[0])
		default:
			return cmpU(a[1], b[1])
		}
	})
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Fatalf("two of %d random IDs have the bits %016x%016x", randomCount, all[i][0], all[i][1])
		}
	}
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func halves(b [16]byte) [2]uint64 {
	var h [2]uint64
	for i := range 8 {
		h[0] = h[0]<<8 | uint64(b[i])
		h[1] = h[1]<<8 | uint64(b[8+i])
	}
	return h
}

// independence checks, over consecutive random IDs vs, that none is
// derivable from its neighbours by the relations a flawed generator would
// show:
//
//   - bit balance: each of the 128 bits is set in ½ ± 1 % of the IDs (a
//     counter or a timestamp leaves high bits fixed);
//   - neighbours' XOR: each bit of v[i] ⊕ v[i+1] is set in ½ ± 1 % of the
//     pairs (a bit that tends to repeat, or to flip, is a correlation);
//   - neighbours' difference: each bit of v[i+1] − v[i] (mod 2^128) is set
//     in ½ ± 1 % of the pairs (a counter or linear generator steps by a
//     constant or small amount);
//   - serial correlation: the Pearson correlation of each half (as a
//     number in [0, 1)) with the next ID's is below 6/√n, six standard
//     deviations of independent values.
//
// Passing is necessary, not sufficient, for independence; the rest is the
// construction, which these tests cannot see: NewRandom reads each ID's
// 16 bytes from crypto/rand, a cryptographic generator, and keeps no state
// of its own. It returns the failures.
func independence(vs [][2]uint64) (failures []string) {
	n := len(vs)
	var ones, xors, diffs [128]int
	count := func(c *[128]int, v [2]uint64) {
		for h := range 2 {
			for w := v[h]; w != 0; w &= w - 1 {
				c[64*h+bits.TrailingZeros64(w)]++
			}
		}
	}
	var sx, sy, sxx, syy, sxy [2]float64
	for i, v := range vs {
		count(&ones, v)
		if i == 0 {
			continue
		}
		p := vs[i-1]
		count(&xors, [2]uint64{p[0] ^ v[0], p[1] ^ v[1]})
		lo, borrow := bits.Sub64(v[1], p[1], 0)
		hi, _ := bits.Sub64(v[0], p[0], borrow)
		count(&diffs, [2]uint64{hi, lo})
		for h := range 2 {
			x, y := float64(p[h])/(1<<64), float64(v[h])/(1<<64)
			sx[h] += x
			sy[h] += y
			sxx[h] += x * x
			syy[h] += y * y
			sxy[h] += x * y
		}
	}
	for name, c := range map[string]*[128]int{"bit": &ones, "neighbours' XOR bit": &xors, "neighbours' difference bit": &diffs} {
		total := n
		if c != &ones {
			total = n - 1
		}
		for b, k := range c {
			if f := float64(k) / float64(total); math.Abs(f-0.5) > 0.01 {
				failures = append(failures, fmt.Sprintf("%s %d is set in %.4f of %d; want 0.5 ± 0.01", name, b, f, total))
			}
		}
	}
	m := float64(n - 1)
	for h := range 2 {
		cov := sxy[h]/m - sx[h]/m*sy[h]/m
		r := cov / math.Sqrt((sxx[h]/m-sx[h]/m*sx[h]/m)*(syy[h]/m-sy[h]/m*sy[h]/m))
		if bound := 6 / math.Sqrt(m); math.Abs(r) > bound {
			failures = append(failures, fmt.Sprintf("serial correlation of half %d is %.5f; want |r| < %.5f", h, r, bound))
		}
	}
	return failures
}

// TestIndependenceCatches: the checks find the generators they are meant
// to: a counter, a millisecond timestamp in front of random bits (as in
// a UUIDv7), and values each derived from the last by a fixed mix that is
// not a counter.
func TestIndependenceCatches(t *testing.T) {
	const n = 100_000
	rnd := func(i int) uint64 { // splitmix64, statistically good on its own
		z := uint64(i)*0x9e3779b97f4a7c15 + 1
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	gens := map[string]func(i int, prev [2]uint64) [2]uint64{
		"counter": func(i int, _ [2]uint64) [2]uint64 { return [2]uint64{rnd(0), uint64(i)} },
		"timestamp": func(i int, _ [2]uint64) [2]uint64 {
			return [2]uint64{uint64(1_700_000_000_000+i/10)<<16 | rnd(2*i)&0xffff, rnd(2*i + 1)}
		},
		"next bit repeats": func(i int, prev [2]uint64) [2]uint64 {
			v := [2]uint64{rnd(2 * i), rnd(2*i + 1)}
			v[0] = v[0]&^1 | prev[0]&1 // bit 0 copies the previous ID's
			return v
		},
	}
	for name, gen := range gens {
		vs := make([][2]uint64, n)
		for i := range vs {
			var prev [2]uint64
			if i > 0 {
				prev = vs[i-1]
			}
			vs[i] = gen(i, prev)
		}
		if f := independence(vs); len(f) == 0 {
			t.Errorf("%s: the checks found nothing", name)
		}
	}
	vs := make([][2]uint64, n)
	for i := range vs {
		vs[i] = [2]uint64{rnd(2 * i), rnd(2*i + 1)}
	}
	if f := independence(vs); len(f) != 0 {
		t.Errorf("splitmix64 output fails: %v", f)
	}
}
