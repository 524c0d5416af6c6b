package snowfence

import (
	"bytes"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"time"
)

// A UUID is a 128-bit universally unique identifier as RFC 9562 defines it,
// in network byte order: UUID[0] holds its most significant bits. Its text
// form is the canonical one, 32 lower-case hexadecimal digits in groups of
// 8-4-4-4-12 ("0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f"). Its byte order is its
// sort order, which is also PostgreSQL's order for a uuid column (it
// compares the 16 bytes as unsigned bytes), so UUIDs whose first 48 bits
// hold Unix milliseconds — UUIDv7 (UUIDGenerator) and the UUIDv8 form of a
// snowfence ID (Schedule.ToUUID) — sort by time.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  unix_ts_ms (v7, v8 of ours)                  |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          unix_ts_ms           |  ver  |       12 bits         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|var|                       62 bits                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The zero UUID is the Nil UUID of RFC 9562 §5.9. UUID is a value type:
// compare with ==, order with Compare.
type UUID [16]byte

// uuidLen is the length of the canonical text form.
const uuidLen = 36

// hexDigits are the lower-case digits String writes.
const hexDigits = "0123456789abcdef"

// String returns the canonical text form: lower-case 8-4-4-4-12.
func (u UUID) String() string {
	var b [uuidLen]byte
	u.appendTo(b[:0])
	return string(b[:])
}

// AppendText appends the canonical text form to b.
func (u UUID) AppendText(b []byte) ([]byte, error) { return u.appendTo(b), nil }

// appendTo appends the canonical text form to b.
func (u UUID) appendTo(b []byte) []byte {
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return b
}

// ParseUUID reads the canonical text form of a UUID: 36 characters, 32
// hexadecimal digits in groups of 8-4-4-4-12 separated by hyphens. Digits
// a–f may be upper or lower case (RFC 9562 §4: case-insensitive on input).
// Nothing else is taken: no braces, no "urn:uuid:" prefix, no form without
// hyphens, no spaces. One spelling per value (up to case) keeps a UUID
// that arrives in a URL or a log line recognisable as the one stored.
// Errors match ErrInvalidUUID.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != uuidLen {
		return u, uuidError(s, fmt.Sprintf("%d characters; a UUID is 36 (8-4-4-4-12 hexadecimal digits with hyphens)", len(s)))
	}
	j := 0
	for i := 0; i < uuidLen; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return u, uuidError(s, fmt.Sprintf("character %q at offset %d is not the hyphen of the 8-4-4-4-12 form", s[i], i))
			}
			i++
			continue
		}
		hi, ok1 := fromHex(s[i])
		lo, ok2 := fromHex(s[i+1])
		if !ok1 || !ok2 {
			at := i
			if ok1 {
				at = i + 1
			}
			return u, uuidError(s, fmt.Sprintf("character %q at offset %d is not a hexadecimal digit", s[at], at))
		}
		u[j] = hi<<4 | lo
		j++
		i += 2
	}
	return u, nil
}

// MustParseUUID is ParseUUID that panics on error, for constants in tests
// and examples.
func MustParseUUID(s string) UUID {
	u, err := ParseUUID(s)
	if err != nil {
		panic(err)
	}
	return u
}

// uuidError is the error of text that is not a UUID; the input is cut to
// 40 bytes.
func uuidError(s, reason string) error {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return fmt.Errorf("%w %q: %s", ErrInvalidUUID, s, reason)
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// MarshalText returns the canonical text form; JSON encodes it as a string.
func (u UUID) MarshalText() ([]byte, error) { return u.appendTo(make([]byte, 0, uuidLen)), nil }

// UnmarshalText reads the text form with ParseUUID's rules.
func (u *UUID) UnmarshalText(b []byte) error {
	v, err := ParseUUID(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// Scan implements sql.Scanner for uuid, text and binary columns: a string
// or []byte in the text form ParseUUID reads, or 16 raw bytes. NULL is
// refused; scan into sql.Null[snowfence.UUID] where a column may hold it.
func (u *UUID) Scan(src any) error {
	switch v := src.(type) {
	case string:
		return u.UnmarshalText([]byte(v))
	case []byte:
		if len(v) == len(u) {
			copy(u[:], v)
			return nil
		}
		return u.UnmarshalText(v)
	case nil:
		return fmt.Errorf("%w: cannot scan NULL into a UUID; use sql.Null[snowfence.UUID]", ErrInvalidUUID)
	}
	return fmt.Errorf("%w: cannot scan %T into a UUID", ErrInvalidUUID, src)
}

// Value implements driver.Valuer: the UUID is stored as its canonical text,
// which PostgreSQL's uuid type (and any text column) takes.
func (u UUID) Value() (driver.Value, error) { return u.String(), nil }

// Version returns the version number in bits 48–51 (7 for UUIDv7, 8 for
// UUIDv8). It is meaningful only for the RFC 9562 variant.
func (u UUID) Version() int { return int(u[6] >> 4) }

// A UUIDVariant is the family of layouts a UUID's variant bits (the top of
// octet 8) name, RFC 9562 §4.1.
type UUIDVariant uint8

// The variants of RFC 9562 §4.1, Table 1.
const (
	// VariantNCS is 0xxx: the Apollo NCS UUIDs, and the Nil UUID.
	VariantNCS UUIDVariant = iota
	// VariantRFC9562 is 10xx: the variant of every version RFC 9562
	// defines, UUIDv7 and UUIDv8 included.
	VariantRFC9562
	// VariantMicrosoft is 110x: Microsoft's backward-compatible GUIDs.
	VariantMicrosoft
	// VariantFuture is 111x: reserved, and the Max UUID.
	VariantFuture
)

// String names the variant.
func (v UUIDVariant) String() string {
	switch v {
	case VariantNCS:
		return "NCS"
	case VariantRFC9562:
		return "RFC 9562"
	case VariantMicrosoft:
		return "Microsoft"
	case VariantFuture:
		return "future"
	}
	return fmt.Sprintf("UUIDVariant(%d)", uint8(v))
}

// Variant returns the variant the top bits of octet 8 name.
func (u UUID) Variant() UUIDVariant {
	switch b := u[8]; {
	case b&0x80 == 0:
		return VariantNCS
	case b&0xc0 == 0x80:
		return VariantRFC9562
	case b&0xe0 == 0xc0:
		return VariantMicrosoft
	}
	return VariantFuture
}

// Time returns the instant in the first 48 bits of a UUIDv7, or of the
// UUIDv8 form of a snowfence ID (recognised by its check bits, see
// Schedule.ToUUID), and true; for any other UUID it returns the zero time
// and false. The instant has millisecond precision and is in UTC.
func (u UUID) Time() (time.Time, bool) {
	if u.Variant() != VariantRFC9562 {
		return time.Time{}, false
	}
	switch u.Version() {
	case 7:
	case 8:
		if _, ok := idOfV8(u); !ok {
			return time.Time{}, false
		}
	default:
		return time.Time{}, false
	}
	return time.UnixMilli(u.unixMs()).UTC(), true
}

// unixMs returns the first 48 bits as a number.
func (u UUID) unixMs() int64 { return int64(binary.BigEndian.Uint64(u[:8]) >> 16) }

// Compare returns -1, 0 or +1 as u sorts before, with or after v: their
// byte order, which is PostgreSQL's order of a uuid column.
func (u UUID) Compare(v UUID) int { return bytes.Compare(u[:], v[:]) }

// IsZero reports whether u is the Nil UUID (all zeros).
func (u UUID) IsZero() bool { return u == UUID{} }
