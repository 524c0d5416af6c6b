package snowfence

import (
	"encoding/binary"
	"fmt"
	"time"
)

// The UUIDv8 form of a snowfence ID (RFC 9562 §5.8), for tables keyed by a
// uuid column. Its first 48 bits are the ID's instant in Unix milliseconds,
// as in a UUIDv7, so in a uuid column the IDs sort exactly as their BIGINTs
// do and interleave by time with UUIDv7 rows. The whole 63-bit ID follows,
// split around the variant bits, then an 11-bit check:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        unix_ts_ms: the ID's instant, bits 47..16              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   unix_ts_ms bits 15..0       |1 0 0 0|   ID bits 62..51      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|1 0|                   ID bits 50..21                          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|             ID bits 20..0               |   check (11 bits)   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The check is CRC-11/FLEXRAY (polynomial 0x385, initial value 0x01a) of
// the ID's 8 bytes in big-endian order.
//
// Order. Two IDs of one schedule with different instants differ in their
// first 48 bits in the same direction as their timestamps, which are the
// IDs' top bits; two with the same instant have the same first 48 bits and
// are ordered by the ID bits after the version. The check comes last and
// never decides an order, because distinct IDs differ before it.
//
// Recognition. The form carries its ID three times over: the instant in
// the first 48 bits is a function of the ID's timestamp bits, and the check
// is a function of the whole ID. FromUUID refuses a UUID of another version
// or variant, one whose check does not match, and one whose instant is not
// the embedded ID's under the schedule. A random UUIDv8 passes with a
// probability of about 2^-11 · 2^-41; a CRC of degree 11 catches every
// error burst of up to 11 bits, so a changed hexadecimal digit anywhere in
// the text is always refused, never read as another ID.

// crc11 is CRC-11/FLEXRAY of the ID's 8 big-endian bytes, four bits at a
// time: crc11Nibble[i] is the register after feeding four zero bits to a
// register whose top four bits are i.
func crc11(id uint64) uint16 {
	crc11Nibble := [16]uint16{0x000, 0x385, 0x70a, 0x48f, 0x591, 0x614, 0x29b, 0x11e,
		0x0a7, 0x322, 0x7ad, 0x428, 0x536, 0x6b3, 0x23c, 0x1b9}
	crc := uint16(0x01a)
	for i := 60; i >= 0; i -= 4 {
		top := crc>>7 ^ uint16(id>>uint(i))&0xf
		crc = crc<<4&0x7ff ^ crc11Nibble[top]
	}
	return crc
}

// idOfV8 extracts the ID of a UUID laid out as the UUIDv8 form, reporting
// whether its check bits match. It looks at neither version, variant nor
// instant.
func idOfV8(u UUID) (ID, bool) {
	hi := binary.BigEndian.Uint64(u[:8])
	lo := binary.BigEndian.Uint64(u[8:])
	id := (hi&0xfff)<<51 | (lo>>11)&(1<<51-1)
	return ID(id), uint16(lo&0x7ff) == crc11(id)
}

// unixMsOf returns the Unix milliseconds of an ID's timestamp under the
// schedule, which every layout of the schedule keeps alike.
func (s Schedule) unixMsOf(id ID) int64 {
	first := s.steps[0].Layout
	tick := int64(id) >> uint(63-first.TimeBits)
	return first.Epoch.UnixMilli() + tick*first.unit().Milliseconds()
}

// ToUUID returns the UUIDv8 form of an ID (see the diagram above): its
// instant under the schedule in the first 48 bits, then the whole ID and a
// check. FromUUID with the same schedule gives the ID back. The form sorts
// in a uuid column exactly as the IDs sort as BIGINTs, and next to the
// UUIDv7 values of the same millisecond (after them, since version 8 > 7).
//
// It is a method of Schedule because an ID alone does not say which instant
// it holds: the layouts' epoch and unit, which a schedule holds alike for
// all its layouts, turn its timestamp bits into Unix milliseconds. It fails
// only for a negative ID or the zero Schedule.
func (s Schedule) ToUUID(id ID) (UUID, error) {
	var u UUID
	if id < 0 {
		return u, &ParseError{Input: id.String(), Reason: "IDs are never negative"}
	}
	if !s.valid() {
		return u, fmt.Errorf("%w: empty schedule; use DefaultSchedule or NewSchedule", ErrInvalidLayout)
	}
	v := uint64(id)
	// Layout.Validate keeps every instant before year 10000, well inside
	// 48 bits of milliseconds (year 10889).
	ms := uint64(s.unixMsOf(id))
	binary.BigEndian.PutUint64(u[:8], ms<<16|0x8<<12|v>>51)
	binary.BigEndian.PutUint64(u[8:], 0b10<<62|(v&(1<<51-1))<<11|uint64(crc11(v)))
	return u, nil
}

// FromUUID returns the ID whose UUIDv8 form (ToUUID) u is. Any other UUID
// is refused with an error matching ErrForeignUUID: another version or
// variant, check bits that do not match the embedded ID, or an instant that
// is not the embedded ID's under this schedule (as when the UUID was made
// with a schedule of another epoch).
func (s Schedule) FromUUID(u UUID) (ID, error) {
	if !s.valid() {
		return 0, fmt.Errorf("%w: empty schedule; use DefaultSchedule or NewSchedule", ErrInvalidLayout)
	}
	foreign := func(reason string) (ID, error) {
		return 0, fmt.Errorf("%w: %s: %s", ErrForeignUUID, u, reason)
	}
	if v := u.Variant(); v != VariantRFC9562 {
		return foreign(fmt.Sprintf("variant %s, not RFC 9562", v))
	}
	if v := u.Version(); v != 8 {
		return foreign(fmt.Sprintf("version %d, not 8", v))
	}
	id, ok := idOfV8(u)
	if !ok {
		return foreign("its check bits do not match; it was not made by ToUUID")
	}
	if got, want := u.unixMs(), s.unixMsOf(id); got != want {
		return foreign(fmt.Sprintf("its instant %s is not its ID's %s under schedule %s",
			time.UnixMilli(got).UTC().Format(timeFormat), time.UnixMilli(want).UTC().Format(timeFormat), s))
	}
	return id, nil
}
