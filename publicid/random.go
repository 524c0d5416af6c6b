package publicid

import (
	"crypto/rand"
	"fmt"
	"unsafe"
)

// Random is a random public ID: a type prefix and 128 bits from
// crypto/rand, written in the TypeID text form,
//
//	order_01h455vb4pex5vsknk084sn02q
//	└─┬─┘└────────────┬───────────┘
//	prefix   26 characters of lower-case Crockford base32 of the 128 bits
//
// (with an empty prefix, the 26 characters alone). Nothing in it derives
// from time, volume or machine; store it in a unique column beside the
// internal ID. The zero Random has the empty prefix and all-zero bits.
type Random struct {
	prefix string
	bits   [16]byte
}

// NewRandom returns a new random public ID of type prefix. prefix follows
// the TypeID rules: at most MaxPrefixLen characters of lower-case a–z and
// '_', starting and ending with a letter, or empty (no prefix and no
// separator). An invalid prefix wraps ErrInvalidPrefix. Each call reads 16
// fresh bytes from crypto/rand and keeps nothing: there is no state from
// which one ID could be derived from another. It is safe for concurrent
// use.
func NewRandom(prefix string) (Random, error) {
	if why := checkPrefix(prefix); why != "" {
		return Random{}, fmt.Errorf("%w: %q: %s", ErrInvalidPrefix, prefix, why)
	}
	r := Random{prefix: prefix}
	rand.Read(r.bits[:]) // never fails (crypto/rand: it crashes the program rather)
	return r, nil
}

// ParseRandom reads the TypeID text form strictly: an optional type prefix
// (the TypeID rules, see NewRandom) and '_', then exactly 26 characters of
// the lower-case Crockford alphabet (0–9 and a–z but i, l, o, u), the first
// 0–7 so that they carry 128 bits. Upper case, hyphens, look-alike
// letters and a leading or trailing '_' are refused (wrapping ErrInvalid),
// never read as something else, so each ID has exactly one text. It takes
// every TypeID, whatever the version of the UUID its bits hold.
func ParseRandom(s string) (Random, error) {
	prefix, suffix, sep := split(s)
	if sep && prefix == "" {
		return Random{}, invalid(s, "a '_' with no type prefix before it")
	}
	if why := checkPrefix(prefix); why != "" {
		return Random{}, invalid(s, why)
	}
	r := Random{prefix: prefix}
	if !decodeBase32(suffix, &r.bits) {
		return Random{}, invalid(s, suffixProblem(suffix, suffixLen))
	}
	return r, nil
}

// RandomFromBits returns the random public ID of type prefix with the
// given bits, for IDs read back from storage in binary form. An invalid
// prefix wraps ErrInvalidPrefix.
func RandomFromBits(prefix string, bits [16]byte) (Random, error) {
	if why := checkPrefix(prefix); why != "" {
		return Random{}, fmt.Errorf("%w: %q: %s", ErrInvalidPrefix, prefix, why)
	}
	return Random{prefix: prefix, bits: bits}, nil
}

// Prefix returns the type prefix ("" for none).
func (r Random) Prefix() string { return r.prefix }

// Bits returns the 128 bits (for a TypeID, its UUID's bytes).
func (r Random) Bits() [16]byte { return r.bits }

// String returns the TypeID text form.
func (r Random) String() string {
	b := r.AppendText(make([]byte, 0, len(r.prefix)+1+suffixLen))
	// b is never written again: the string shares it, as strings.Builder
	// does, so String allocates once.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// AppendText appends the TypeID text form to dst.
func (r Random) AppendText(dst []byte) []byte {
	if r.prefix != "" {
		dst = append(append(dst, r.prefix...), '_')
	}
	return appendBase32(dst, &r.bits)
}

// MarshalText returns the TypeID text form; in JSON a Random is a string.
func (r Random) MarshalText() ([]byte, error) { return r.AppendText(nil), nil }

// UnmarshalText reads the text form as ParseRandom does.
func (r *Random) UnmarshalText(b []byte) error {
	v, err := ParseRandom(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// invalid wraps ErrInvalid with the text (cut to 100 bytes) and why.
func invalid(s, why string) error {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return fmt.Errorf("%w: %q: %s", ErrInvalid, s, why)
}

// suffixProblem says what is wrong with suffix, which should be want
// characters of base32 text ending in the 26 of 128 bits.
func suffixProblem(suffix string, want int) string {
	if len(suffix) != want {
		return fmt.Sprintf("the part after the type prefix is %d characters; want %d", len(suffix), want)
	}
	bits := suffix[len(suffix)-suffixLen:]
	for i := 0; i < len(suffix); i++ {
		if decodeTable[suffix[i]] == invalidDigit {
			return fmt.Sprintf("character %q at offset %d of the suffix is not in the lower-case alphabet 0123456789abcdefghjkmnpqrstvwxyz", suffix[i], i)
		}
	}
	if decodeTable[bits[0]] > 7 {
		return fmt.Sprintf("the 128 bits' first character %q is above 7: the text would carry more than 128 bits", bits[0])
	}
	return "not the canonical text"
}
