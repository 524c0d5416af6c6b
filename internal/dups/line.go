package dups

import (
	"math"

	"github.com/snowfence/snowfence"
)

// A LineKind says what ParseLine found on a line.
type LineKind uint8

// The kinds of line.
const (
	// Blank is an empty line, or one of spaces and tabs only: skipped.
	Blank LineKind = iota
	// Decimal is an ID in its canonical decimal form.
	Decimal
	// Bad is anything else: not an ID in decimal. (Scan then tries the
	// UUIDv8 form before it counts the line as bad.)
	Bad
)

// ParseLine reads one line of the one-ID-per-line format: the canonical
// decimal form of an ID (as snowfence.ParseID takes it: 1 to 19 digits, no
// sign, no leading zero, at most 2^63 − 1), with spaces, tabs and a
// trailing carriage return around it ignored. line excludes the newline.
// It returns the trimmed line too, for the UUID form and for reporting.
//
// It is hand-written rather than bufio.Scanner plus snowfence.ParseID
// because it is the product: on 100 million lines, the cost of splitting
// and parsing is the cost of the whole tool, and this neither allocates
// nor builds an error for a line it refuses.
func ParseLine(line []byte) (id uint64, trimmed []byte, kind LineKind) {
	for len(line) > 0 {
		c := line[len(line)-1]
		if c != '\r' && c != ' ' && c != '\t' {
			break
		}
		line = line[:len(line)-1]
	}
	for len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
		line = line[1:]
	}
	if len(line) == 0 {
		return 0, line, Blank
	}
	v, ok := parseDecimal(line)
	if !ok {
		return 0, line, Bad
	}
	return v, line, Decimal
}

// parseDecimal reads the canonical decimal form of an ID.
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 || (len(b) > 1 && b[0] == '0') {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		v = v*10 + uint64(d) // 19 digits cannot overflow a uint64
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return v, true
}

// uuidLen is the length of a UUID's text form.
const uuidLen = 36

// parseUUIDForm reads the UUIDv8 form of an ID (snowfence.Schedule.ToUUID)
// under sched.
func parseUUIDForm(b []byte, sched snowfence.Schedule) (uint64, bool) {
	if len(b) != uuidLen {
		return 0, false
	}
	u, err := snowfence.ParseUUID(string(b))
	if err != nil {
		return 0, false
	}
	id, err := sched.FromUUID(u)
	if err != nil {
		return 0, false
	}
	return uint64(id), true
}
