package snowfence

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// An ID is a 64-bit identifier. Its bit 63 is always zero, so it is a
// non-negative int64 and fits a signed BIGINT column. Its text form is the
// canonical decimal ("97301141913751557"): no sign, no leading zeros, no
// spaces. In JSON it travels as a string, because JavaScript numbers are exact
// only up to 2^53 − 1.
type ID int64

// String returns the decimal form of the ID.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }

// Int64 returns the ID as an int64.
func (id ID) Int64() int64 { return int64(id) }

// Time returns the instant of the ID's timestamp under the default schedule.
// Use Schedule.Decode for other layouts.
func (id ID) Time() time.Time { return V1().TimeOf(id) }

// ParseID reads the canonical decimal form of an ID: 1 to 19 ASCII digits, no
// sign, no spaces, no leading zeros, at most 9223372036854775807.
func ParseID(s string) (ID, error) {
	fail := func(reason string) (ID, error) {
		in := s
		if len(in) > 40 {
			in = in[:40] + "…"
		}
		return 0, &ParseError{Input: in, Reason: reason}
	}
	switch {
	case s == "":
		return fail("empty; an ID is 1 to 19 decimal digits")
	case len(s) > 19:
		return fail("more than 19 characters; the largest ID is 9223372036854775807")
	case len(s) > 1 && s[0] == '0':
		return fail("leading zero; write the ID without one")
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return fail(fmt.Sprintf("character %q at offset %d is not a decimal digit (no signs, spaces or separators)", c, i))
		}
		v = v*10 + uint64(c-'0') // 19 digits cannot overflow uint64
	}
	if v > 1<<63-1 {
		return fail("larger than 9223372036854775807, the largest ID")
	}
	return ID(v), nil
}

// MustParseID is ParseID that panics on error, for constants in tests and
// examples.
func MustParseID(s string) ID {
	id, err := ParseID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// MarshalText returns the decimal form; JSON encodes it as a string.
func (id ID) MarshalText() ([]byte, error) {
	if id < 0 {
		return nil, &ParseError{Input: id.String(), Reason: "IDs are never negative"}
	}
	return strconv.AppendInt(nil, int64(id), 10), nil
}

// UnmarshalText reads the decimal form with ParseID's rules.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Scan implements sql.Scanner for BIGINT and text columns.
func (id *ID) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		if v < 0 {
			return &ParseError{Input: strconv.FormatInt(v, 10), Reason: "IDs are never negative"}
		}
		*id = ID(v)
		return nil
	case []byte:
		return id.UnmarshalText(v)
	case string:
		return id.UnmarshalText([]byte(v))
	case nil:
		return fmt.Errorf("%w: cannot scan NULL into an ID; use sql.Null[snowfence.ID]", ErrInvalidID)
	}
	return fmt.Errorf("%w: cannot scan %T into an ID", ErrInvalidID, src)
}

// Value implements driver.Valuer: the ID is stored as an int64.
func (id ID) Value() (driver.Value, error) { return int64(id), nil }

// MarshalJSON writes the decoded ID as the JSON object the decode endpoint
// returns, fields in the order of Decoded, with created_at in RFC 3339
// with milliseconds, UTC.
func (d Decoded) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ID           ID     `json:"id"`
		UUID         string `json:"uuid,omitempty"`
		Layout       string `json:"layout"`
		CreatedAt    string `json:"created_at"`
		Region       string `json:"region"`
		RegionNumber int    `json:"region_number"`
		Machine      int    `json:"machine"`
		Sequence     int    `json:"sequence"`
		Warning      string `json:"warning,omitempty"`
	}{d.ID, uuidText(d.UUID), d.Layout, d.CreatedAt.UTC().Format(timeFormat), d.Region, d.RegionNumber, d.Machine, d.Sequence, d.Warning})
}

// uuidText is the text of u, "" for the zero UUID.
func uuidText(u UUID) string {
	if u.IsZero() {
		return ""
	}
	return u.String()
}
