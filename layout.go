package snowfence

import (
	"fmt"
	"time"
)

// A Layout says how a 64-bit ID is cut into fields. Bit 63 is always zero so
// IDs stay positive in signed 64-bit columns; the other 63 bits are, from the
// top: timestamp, region, machine, sequence. A layout is data: any split whose
// widths sum to 63 can be described.
//
// The timestamp counts Unit-long ticks since Epoch.
type Layout struct {
	// Name identifies the layout in decoded output ("v1", "v2").
	Name string
	// Epoch is the instant of timestamp 0. It must be at or after the Unix
	// epoch and have whole milliseconds.
	Epoch time.Time
	// Unit is the length of one timestamp tick: a whole number of
	// milliseconds, at least 1 ms. Zero means 1 ms.
	Unit time.Duration
	// TimeBits, RegionBits, MachineBits and SequenceBits are the widths of
	// the fields. They must sum to 63 and TimeBits and SequenceBits must be
	// at least 1.
	TimeBits, RegionBits, MachineBits, SequenceBits int
}

// epoch2026 is the epoch of the v1 and v2 layouts, 2026-01-01T00:00:00Z.
var epoch2026 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// V1 returns the v1 layout: 41 bits of milliseconds since 2026-01-01T00:00:00Z,
// 10 bits of machine, 12 bits of sequence.
func V1() Layout {
	return Layout{Name: "v1", Epoch: epoch2026, Unit: time.Millisecond, TimeBits: 41, RegionBits: 0, MachineBits: 10, SequenceBits: 12}
}

// V2 returns the v2 layout: 41 bits of milliseconds since 2026-01-01T00:00:00Z,
// 3 bits of region, 9 bits of machine, 10 bits of sequence. Its timestamp sits
// where v1's does, so the two can share one schedule.
func V2() Layout {
	return Layout{Name: "v2", Epoch: epoch2026, Unit: time.Millisecond, TimeBits: 41, RegionBits: 3, MachineBits: 9, SequenceBits: 10}
}

// LayoutByName returns a preset layout: "v1" or "v2".
func LayoutByName(name string) (Layout, error) {
	switch name {
	case "v1":
		return V1(), nil
	case "v2":
		return V2(), nil
	}
	return Layout{}, fmt.Errorf("%w: unknown layout %q (known: v1, v2)", ErrInvalidLayout, name)
}

// unit returns the tick length, applying the zero default.
func (l Layout) unit() time.Duration {
	if l.Unit == 0 {
		return time.Millisecond
	}
	return l.Unit
}

// Validate reports whether the layout can be used, with an error that says
// what to change.
func (l Layout) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidLayout, l.Name, fmt.Sprintf(format, args...))
	}
	for _, w := range []struct {
		name string
		bits int
	}{{"time", l.TimeBits}, {"region", l.RegionBits}, {"machine", l.MachineBits}, {"sequence", l.SequenceBits}} {
		if w.bits < 0 || w.bits > 63 {
			return bad("%s width %d is outside 0..63", w.name, w.bits)
		}
	}
	if sum := l.TimeBits + l.RegionBits + l.MachineBits + l.SequenceBits; sum != 63 {
		return bad("widths sum to %d; they must sum to 63 (bit 63 stays zero so IDs are positive int64)", sum)
	}
	if l.TimeBits < 1 || l.SequenceBits < 1 {
		return bad("time and sequence need at least 1 bit each")
	}
	u := l.unit()
	if u < time.Millisecond || u%time.Millisecond != 0 {
		return bad("unit %s must be a whole number of milliseconds", u)
	}
	if l.Epoch.IsZero() {
		return bad("epoch is not set")
	}
	e := l.Epoch.UnixMilli()
	if e < 0 || !l.Epoch.Equal(time.UnixMilli(e)) {
		return bad("epoch %s must be at or after 1970-01-01 and have whole milliseconds", l.Epoch.UTC().Format(timeFormat))
	}
	// The last instant must fit in year 9999, which also keeps all
	// arithmetic on Unix milliseconds far from int64 overflow.
	span := (int64(1)<<l.TimeBits - 1)
	if span > (253402300799999-e)/u.Milliseconds() {
		return bad("epoch plus %d ticks of %s runs past year 9999", span, u)
	}
	return nil
}

// LastInstant is the latest timestamp the layout can represent.
func (l Layout) LastInstant() time.Time {
	maxTick := int64(1)<<l.TimeBits - 1
	return time.UnixMilli(l.Epoch.UnixMilli() + maxTick*l.unit().Milliseconds()).UTC()
}

// Compose builds an ID from its fields without any check of uniqueness; it is
// for tests, tools and decoding round trips. tick is the timestamp in units
// since the epoch. It fails if a field does not fit its width.
func (l Layout) Compose(tick int64, region, machine, sequence int) (ID, error) {
	if err := l.Validate(); err != nil {
		return 0, err
	}
	fits := func(name string, v int64, bits int) error {
		if v < 0 || v >= int64(1)<<bits {
			return fmt.Errorf("%w: %s %d does not fit layout %s's %d bits (0..%d)", ErrInvalidID, name, v, l.Name, bits, int64(1)<<bits-1)
		}
		return nil
	}
	for _, err := range []error{
		fits("timestamp", tick, l.TimeBits),
		fits("region", int64(region), l.RegionBits),
		fits("machine", int64(machine), l.MachineBits),
		fits("sequence", int64(sequence), l.SequenceBits),
	} {
		if err != nil {
			return 0, err
		}
	}
	s := l.shifts()
	return ID(tick<<s.time | int64(region)<<s.region | int64(machine)<<s.machine | int64(sequence)), nil
}

// ComposeAt is Compose with the timestamp given as a time, truncated to the
// layout's unit. It fails for a time before the epoch.
func (l Layout) ComposeAt(t time.Time, region, machine, sequence int) (ID, error) {
	d := t.UnixMilli() - l.Epoch.UnixMilli()
	if d < 0 {
		return 0, fmt.Errorf("%w: %s is before layout %s's epoch %s", ErrInvalidID, t.UTC().Format(timeFormat), l.Name, l.Epoch.UTC().Format(timeFormat))
	}
	return l.Compose(d/l.unit().Milliseconds(), region, machine, sequence)
}

type shifts struct{ time, region, machine uint }

func (l Layout) shifts() shifts {
	return shifts{
		time:    uint(l.RegionBits + l.MachineBits + l.SequenceBits),
		region:  uint(l.MachineBits + l.SequenceBits),
		machine: uint(l.SequenceBits),
	}
}

// Fields is the content of an ID under one layout.
type Fields struct {
	Tick     int64
	Region   int
	Machine  int
	Sequence int
}

// Split cuts an ID into its fields under this layout.
func (l Layout) Split(id ID) Fields {
	s := l.shifts()
	v := int64(id)
	mask := func(bits int) int64 { return int64(1)<<bits - 1 }
	return Fields{
		Tick:     v >> s.time,
		Region:   int(v >> s.region & mask(l.RegionBits)),
		Machine:  int(v >> s.machine & mask(l.MachineBits)),
		Sequence: int(v & mask(l.SequenceBits)),
	}
}

// TimeOf returns the instant of an ID's timestamp under this layout.
func (l Layout) TimeOf(id ID) time.Time {
	return time.UnixMilli(l.Epoch.UnixMilli() + l.Split(id).Tick*l.unit().Milliseconds()).UTC()
}

// String describes the layout, e.g. "v1 (41/0/10/12 bits, 1ms since 2026-01-01T00:00:00.000Z)".
func (l Layout) String() string {
	return fmt.Sprintf("%s (%d/%d/%d/%d bits, %s since %s)", l.Name, l.TimeBits, l.RegionBits, l.MachineBits, l.SequenceBits, l.unit(), l.Epoch.UTC().Format(timeFormat))
}
