package client

import (
	"encoding/binary"
	"fmt"
	"math"
)

// parseBatch reads b, the body of a 200 answer to POST /v1/ids?count=n, and
// appends its IDs to dst. It takes exactly the documented shape,
// {"ids":["…",…]}, with optional JSON white space between tokens: one
// object whose only member is "ids" (spelled without escapes), an array of
// exactly n strings, each an ID in canonical decimal (1 to 19 digits, no
// leading zero, at most 2^63 − 1) greater than zero and greater than the
// one before it, and nothing after the object. Anything else is an error
// and dst comes back as it was: a body that breaks a rule yields no IDs at
// all, not the ones before the break.
//
// It is written by hand because it is the client's only cost per ID besides
// the hand-out: encoding/json, decoding into []snowfence.ID through
// UnmarshalText, takes about ten times as long (BenchmarkParseBatch) and
// would still need the checks of order and count made here.
func parseBatch(dst []int64, b []byte, n int) ([]int64, string) {
	start := len(dst)
	fail := func(i int, what string) ([]int64, string) {
		return dst[:start], fmt.Sprintf("%s at offset %d", what, i)
	}
	i := space(b, 0)
	const head = `"ids"`
	if i >= len(b) || b[i] != '{' {
		return fail(i, `not a JSON object {"ids":[…]}`)
	}
	i = space(b, i+1)
	if len(b)-i < len(head) || string(b[i:i+len(head)]) != head {
		return fail(i, `the object's member is not "ids"`)
	}
	i = space(b, i+len(head))
	if i >= len(b) || b[i] != ':' {
		return fail(i, `expected ':' after "ids"`)
	}
	i = space(b, i+1)
	if i >= len(b) || b[i] != '[' {
		return fail(i, `"ids" is not an array`)
	}
	i = space(b, i+1)
	prev := int64(0)
	for k := 0; ; k++ {
		if k == n {
			return fail(i, fmt.Sprintf("more than the %d IDs asked for", n))
		}
		if i >= len(b) || b[i] != '"' {
			return fail(i, "expected an ID in double quotes")
		}
		i++
		d := i
		var v uint64
		// Sixteen digits eight at a time when they are there: an ID of
		// today has 17 to 19, and digit by digit is a chain of 19
		// dependent multiply-adds.
		if len(b)-i >= 17 && eightDigits(b[i:]) && eightDigits(b[i+8:]) {
			v = eightValue(b[i:])*1e8 + eightValue(b[i+8:])
			i += 16
		}
		for i < len(b) && i-d < 20 && '0' <= b[i] && b[i] <= '9' {
			v = v*10 + uint64(b[i]-'0')
			i++
		}
		switch nd := i - d; {
		case nd == 0:
			return fail(i, "an ID is not 1 to 19 decimal digits")
		case nd > 19:
			return fail(d, "an ID has more than 19 digits")
		case b[d] == '0' && nd > 1:
			return fail(d, "an ID has a leading zero")
		case v > math.MaxInt64:
			return fail(d, "an ID is larger than 9223372036854775807")
		}
		if i >= len(b) || b[i] != '"' {
			return fail(i, "an ID is not 1 to 19 decimal digits")
		}
		i++
		id := int64(v)
		if id <= prev {
			if k == 0 {
				return fail(d, "an ID is zero")
			}
			return fail(d, "the IDs are not strictly increasing")
		}
		dst = append(dst, id)
		prev = id
		i = space(b, i)
		if i < len(b) && b[i] == ',' {
			i = space(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			if k+1 != n {
				return fail(i, fmt.Sprintf("%d IDs where %d were asked for", k+1, n))
			}
			break
		}
		return fail(i, "expected ',' or ']' after an ID")
	}
	i = space(b, i+1)
	if i >= len(b) || b[i] != '}' {
		return fail(i, `expected '}' after the array; the object has only "ids"`)
	}
	if i = space(b, i+1); i != len(b) {
		return fail(i, "data after the object")
	}
	return dst, ""
}

// eightDigits reports whether b starts with eight ASCII digits.
func eightDigits(b []byte) bool {
	x := binary.LittleEndian.Uint64(b)
	return (x&0xF0F0F0F0F0F0F0F0)|((x+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4 == 0x3333333333333333
}

// eightValue returns the value of the eight ASCII digits b starts with.
func eightValue(b []byte) uint64 {
	x := binary.LittleEndian.Uint64(b) - 0x3030303030303030
	x = x*10 + x>>8 // pairs of digits
	const mask = 0x000000FF000000FF
	return ((x&mask)*(100+1000000<<32) + (x>>16&mask)*(1+10000<<32)) >> 32
}

// space skips JSON white space from i.
func space(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
