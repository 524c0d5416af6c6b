package snowfence

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A Step puts a layout in force from an instant on.
type Step struct {
	// From is the first instant the layout applies to. The first step of a
	// schedule must have a zero From (it applies from the epoch on).
	From time.Time
	// Layout is the layout in force from From until the next step.
	Layout Layout
}

// A Schedule maps instants to layouts, so the layout can change without a
// flag day: every layout in one schedule keeps the timestamp in the same bits
// with the same epoch and unit, so a reader finds an ID's timestamp first and
// then picks the layout in force at that instant.
//
// The zero Schedule is not valid; use DefaultSchedule or NewSchedule.
type Schedule struct {
	steps []Step
	// fromTick[i] is the first tick of steps[i].
	fromTick []int64
}

// DefaultSchedule is v1 from the epoch on.
func DefaultSchedule() Schedule {
	s, _ := NewSchedule(Step{Layout: V1()})
	return s
}

// NewSchedule checks and returns a schedule. Steps must be in increasing From
// order, the first with a zero From, and all layouts must share epoch, unit
// and timestamp width. A cutover must fall on a tick boundary and change the
// layout (a step repeating the one before it is refused).
func NewSchedule(steps ...Step) (Schedule, error) {
	if len(steps) == 0 {
		return Schedule{}, fmt.Errorf("%w: a schedule needs at least one layout", ErrInvalidLayout)
	}
	if !steps[0].From.IsZero() {
		return Schedule{}, fmt.Errorf("%w: the first layout (%s) must apply from the epoch on; leave its From zero", ErrInvalidLayout, steps[0].Layout.Name)
	}
	first := steps[0].Layout
	s := Schedule{steps: append([]Step(nil), steps...), fromTick: make([]int64, len(steps))}
	unitMs := first.unit().Milliseconds()
	for i, st := range steps {
		l := st.Layout
		if err := l.Validate(); err != nil {
			return Schedule{}, err
		}
		if !l.Epoch.Equal(first.Epoch) || l.unit() != first.unit() || l.TimeBits != first.TimeBits {
			return Schedule{}, fmt.Errorf("%w: layout %s keeps its timestamp differently from %s (epoch, unit and time width must match), so an ID could not be decoded without knowing its layout", ErrInvalidLayout, l.Name, first.Name)
		}
		if i == 0 {
			continue
		}
		if prev := steps[i-1].Layout; l.String() == prev.String() {
			// Such a step changes no instant's layout, only the steps'
			// numbering, and lease keepers keep each step's machine
			// numbers in a keyspace of its own by that numbering: two
			// schedules that agree at every instant must number their
			// steps alike.
			return Schedule{}, fmt.Errorf("%w: layout %s at %s repeats the layout in force before it; leave the step out", ErrInvalidLayout, l.Name, st.From.UTC().Format(timeFormat))
		}
		d := st.From.UnixMilli() - first.Epoch.UnixMilli()
		if d <= 0 || d%unitMs != 0 || !st.From.Equal(time.UnixMilli(st.From.UnixMilli())) {
			return Schedule{}, fmt.Errorf("%w: cutover to %s at %s must be after the epoch and on a %s boundary", ErrInvalidLayout, l.Name, st.From.UTC().Format(timeFormat), first.unit())
		}
		s.fromTick[i] = d / unitMs
		if s.fromTick[i] <= s.fromTick[i-1] {
			return Schedule{}, fmt.Errorf("%w: cutovers must be in increasing order (%s at %s)", ErrInvalidLayout, l.Name, st.From.UTC().Format(timeFormat))
		}
	}
	return s, nil
}

// MustSchedule is NewSchedule that panics on error, for package-level
// variables and tests.
func MustSchedule(steps ...Step) Schedule {
	s, err := NewSchedule(steps...)
	if err != nil {
		panic(err)
	}
	return s
}

// ParseSchedule reads the textual form "v1" or "v1,v2@2028-01-01T00:00:00Z":
// preset layout names separated by commas, each after the first with the
// RFC 3339 instant it takes effect. The empty string is the default schedule.
func ParseSchedule(text string) (Schedule, error) {
	if strings.TrimSpace(text) == "" {
		return DefaultSchedule(), nil
	}
	var steps []Step
	for i, part := range strings.Split(text, ",") {
		name, at, hasAt := strings.Cut(strings.TrimSpace(part), "@")
		l, err := LayoutByName(name)
		if err != nil {
			return Schedule{}, err
		}
		st := Step{Layout: l}
		if hasAt != (i > 0) {
			return Schedule{}, fmt.Errorf("%w: in %q, every layout but the first needs @<RFC 3339 instant> and the first takes none", ErrInvalidLayout, text)
		}
		if hasAt {
			if st.From, err = time.Parse(time.RFC3339Nano, at); err != nil {
				return Schedule{}, fmt.Errorf("%w: cutover %q is not an RFC 3339 instant such as 2028-01-01T00:00:00Z", ErrInvalidLayout, at)
			}
		}
		steps = append(steps, st)
	}
	return NewSchedule(steps...)
}

// String returns the textual form ParseSchedule reads.
func (s Schedule) String() string {
	var b strings.Builder
	for i, st := range s.steps {
		if i > 0 {
			b.WriteString("," + st.Layout.Name + "@" + st.From.UTC().Format(time.RFC3339Nano))
			continue
		}
		b.WriteString(st.Layout.Name)
	}
	return b.String()
}

// Steps returns a copy of the schedule's steps.
func (s Schedule) Steps() []Step { return append([]Step(nil), s.steps...) }

// valid reports whether the schedule was built by NewSchedule.
func (s Schedule) valid() bool { return len(s.steps) > 0 }

// IsZero reports whether s is the zero Schedule, which configurations read
// as "the default" (DefaultSchedule).
func (s Schedule) IsZero() bool { return len(s.steps) == 0 }

// stepAt returns the index of the step in force at a tick.
func (s Schedule) stepAt(tick int64) int {
	return sort.Search(len(s.fromTick), func(i int) bool { return s.fromTick[i] > tick }) - 1
}

// LayoutAt returns the layout in force at instant t.
func (s Schedule) LayoutAt(t time.Time) Layout {
	return s.steps[s.stepIndexAt(t)].Layout
}

// Decoded is an ID taken apart. Its JSON form is the one the HTTP decode
// endpoint returns, with the fields in this order.
type Decoded struct {
	ID ID `json:"id"`
	// UUID is the UUIDv8 form (Schedule.ToUUID) the ID was read from, as
	// the decode endpoint and CLI take either form; the zero UUID, left
	// out of the JSON, when the ID was given as itself.
	UUID      UUID      `json:"uuid,omitzero"`
	Layout    string    `json:"layout"`
	CreatedAt time.Time `json:"created_at"`
	// Region is the region's name when the ID was decoded with region
	// names (DecodeNamed), "" if the region registry does not know its
	// number (Warning then says so); without names, the region number in
	// decimal.
	Region       string `json:"region"`
	RegionNumber int    `json:"region_number"`
	Machine      int    `json:"machine"`
	Sequence     int    `json:"sequence"`
	// Warning, if not empty, says what could not be decoded, such as a
	// region number the region registry does not know. The ID is still
	// decoded.
	Warning string `json:"warning,omitempty"`
}

// Decode takes an ID apart, picking the layout by the ID's timestamp. Region
// is the region number in decimal (DecodeNamed gives region names). It
// fails only for a negative ID.
func (s Schedule) Decode(id ID) (Decoded, error) { return s.DecodeNamed(id, nil) }

// DecodeNamed is Decode with region names: name returns the name of a
// region number, false for a number the region registry does not know.
// Region is then the name, or "" with Warning saying the number is not
// registered. A nil name decodes as Decode does, the region number in
// decimal. An ID of a layout without region bits (v1) carries no region:
// its Region stays "0", with no name looked up and no warning.
func (s Schedule) DecodeNamed(id ID, name func(number int) (string, bool)) (Decoded, error) {
	if id < 0 {
		return Decoded{}, &ParseError{Input: id.String(), Reason: "IDs are never negative"}
	}
	if !s.valid() {
		return Decoded{}, fmt.Errorf("%w: empty schedule; use DefaultSchedule or NewSchedule", ErrInvalidLayout)
	}
	first := s.steps[0].Layout
	tick := int64(id) >> uint(63-first.TimeBits)
	l := s.steps[s.stepAt(tick)].Layout
	f := l.Split(id)
	d := Decoded{
		ID:           id,
		Layout:       l.Name,
		CreatedAt:    l.TimeOf(id),
		Region:       strconv.Itoa(f.Region),
		RegionNumber: f.Region,
		Machine:      f.Machine,
		Sequence:     f.Sequence,
	}
	if name != nil && l.RegionBits > 0 {
		n, ok := name(f.Region)
		d.Region = n
		if !ok {
			d.Region = ""
			d.Warning = fmt.Sprintf("region number %d is not in the region registry", f.Region)
		}
	}
	return d, nil
}

// Decode takes an ID apart with the default schedule (v1 only).
func Decode(id ID) (Decoded, error) { return DefaultSchedule().Decode(id) }
