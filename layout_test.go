package snowfence_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// vectors are worked examples: the first two are the v1 and v2 examples of
// docs/design.md#id-layouts.
var vectors = []struct {
	name                      string
	layout                    func() snowfence.Layout
	at                        string
	region, machine, sequence int
	want                      string
}{
	{"design v1", snowfence.V1, "2026-09-26T12:00:00.000Z", 0, 37, 5, "97301141913751557"},
	{"design v2", snowfence.V2, "2031-03-01T09:30:00.000Z", 2, 170, 3, "683244571854022659"},
	{"v1 epoch+0", snowfence.V1, "2026-01-01T00:00:00.000Z", 0, 0, 0, "0"},
	{"v1 epoch+0 last fields", snowfence.V1, "2026-01-01T00:00:00.000Z", 0, 1023, 4095, "4194303"},
	{"v1 last instant", snowfence.V1, "2095-09-07T15:47:35.551Z", 0, 1023, 4095, "9223372036854775807"},
	{"v1 last instant zero fields", snowfence.V1, "2095-09-07T15:47:35.551Z", 0, 0, 0, "9223372036850581504"},
	{"v2 last instant", snowfence.V2, "2095-09-07T15:47:35.551Z", 7, 511, 1023, "9223372036854775807"},
	{"v2 region only", snowfence.V2, "2026-01-01T00:00:00.001Z", 5, 0, 0, "6815744"},
}

func TestWorkedVectors(t *testing.T) {
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			l := v.layout()
			at := mustTime(t, v.at)
			id, err := l.ComposeAt(at, v.region, v.machine, v.sequence)
			if err != nil {
				t.Fatalf("ComposeAt: %v", err)
			}
			if got := id.String(); got != v.want {
				t.Fatalf("ComposeAt = %s, want %s", got, v.want)
			}
			parsed, err := snowfence.ParseID(v.want)
			if err != nil || parsed != id {
				t.Fatalf("ParseID(%s) = %d, %v; want %d", v.want, parsed, err, id)
			}
			f := l.Split(parsed)
			if f.Region != v.region || f.Machine != v.machine || f.Sequence != v.sequence {
				t.Errorf("Split = %+v, want region %d machine %d sequence %d", f, v.region, v.machine, v.sequence)
			}
			if got := l.TimeOf(parsed); !got.Equal(at) {
				t.Errorf("TimeOf = %s, want %s", got.Format(time.RFC3339Nano), v.at)
			}
		})
	}
}

func TestLastInstant(t *testing.T) {
	for _, l := range []snowfence.Layout{snowfence.V1(), snowfence.V2()} {
		if got, want := l.LastInstant(), mustTime(t, "2095-09-07T15:47:35.551Z"); !got.Equal(want) {
			t.Errorf("%s: LastInstant = %s, want %s", l.Name, got, want)
		}
	}
}

// Other real layouts must be expressible as data.
func TestOtherLayouts(t *testing.T) {
	sonyflake := snowfence.Layout{Name: "sonyflake-like", Epoch: mustTime(t, "2014-09-01T00:00:00Z"), Unit: 10 * time.Millisecond,
		TimeBits: 39, MachineBits: 16, SequenceBits: 8}
	// Instagram's own IDs spend 41+13+10 = 64 bits (their sign bit too);
	// with bit 63 kept zero, the same 13-bit shard and 10-bit sequence leave
	// 40 bits of milliseconds (about 34.8 years).
	instagram := snowfence.Layout{Name: "instagram-like", Epoch: mustTime(t, "2011-01-01T00:00:00Z"),
		TimeBits: 40, MachineBits: 13, SequenceBits: 10}
	cases := []struct {
		name     string
		l        snowfence.Layout
		at       string
		machine  int
		seq      int
		wantLast string
	}{
		{"sonyflake", sonyflake, "2026-09-26T12:00:00.010Z", 65535, 255, "2188-11-16T03:28:58.870Z"},
		{"instagram", instagram, "2026-09-26T12:00:00.001Z", 8191, 1023, "2045-11-03T19:53:47.775Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.l.Validate(); err != nil {
				t.Fatal(err)
			}
			at := mustTime(t, c.at)
			id, err := c.l.ComposeAt(at, 0, c.machine, c.seq)
			if err != nil {
				t.Fatal(err)
			}
			f := c.l.Split(id)
			if f.Machine != c.machine || f.Sequence != c.seq || !c.l.TimeOf(id).Equal(at) {
				t.Errorf("round trip: %+v at %s, want machine %d seq %d at %s", f, c.l.TimeOf(id), c.machine, c.seq, c.at)
			}
			if got := c.l.LastInstant().Format("2006-01-02T15:04:05.000Z"); got != c.wantLast {
				t.Errorf("LastInstant = %s, want %s", got, c.wantLast)
			}
			if _, err := c.l.Compose(0, 0, c.machine+1, 0); !errors.Is(err, snowfence.ErrInvalidID) {
				t.Errorf("machine %d beyond width: err = %v, want ErrInvalidID", c.machine+1, err)
			}
		})
	}
}

func TestLayoutValidate(t *testing.T) {
	ok := snowfence.V1()
	cases := []struct {
		name   string
		mutate func(*snowfence.Layout)
	}{
		{"widths sum to 64 (instagram's own split)", func(l *snowfence.Layout) { l.TimeBits, l.MachineBits, l.SequenceBits = 41, 13, 10 }},
		{"widths sum to 62", func(l *snowfence.Layout) { l.SequenceBits = 11 }},
		{"negative width", func(l *snowfence.Layout) { l.RegionBits, l.SequenceBits = -1, 13 }},
		{"no sequence bits", func(l *snowfence.Layout) { l.MachineBits, l.SequenceBits = 22, 0 }},
		{"sub-millisecond unit", func(l *snowfence.Layout) { l.Unit = 500 * time.Microsecond }},
		{"fractional unit", func(l *snowfence.Layout) { l.Unit = 1500 * time.Microsecond }},
		{"zero epoch", func(l *snowfence.Layout) { l.Epoch = time.Time{} }},
		{"epoch before 1970", func(l *snowfence.Layout) { l.Epoch = mustTime(t, "1969-12-31T00:00:00Z") }},
		{"epoch with microseconds", func(l *snowfence.Layout) { l.Epoch = l.Epoch.Add(time.Microsecond) }},
		{"runs past year 9999", func(l *snowfence.Layout) { l.Unit = 1000 * time.Millisecond * 3600 }},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("v1: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := ok
			c.mutate(&l)
			if err := l.Validate(); !errors.Is(err, snowfence.ErrInvalidLayout) {
				t.Fatalf("Validate = %v, want ErrInvalidLayout", err)
			}
		})
	}
}

func TestScheduleDecode(t *testing.T) {
	s, err := snowfence.ParseSchedule("v1,v2@2028-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "v1,v2@2028-01-01T00:00:00Z" {
		t.Errorf("String = %q", got)
	}
	cut := mustTime(t, "2028-01-01T00:00:00Z")
	before, _ := snowfence.V1().ComposeAt(cut.Add(-time.Millisecond), 0, 1023, 4095)
	at, _ := snowfence.V2().ComposeAt(cut, 7, 511, 1023)
	after, _ := snowfence.V2().ComposeAt(mustTime(t, "2031-03-01T09:30:00Z"), 2, 170, 3)
	cases := []struct {
		id                        snowfence.ID
		layout                    string
		region, machine, sequence int
	}{
		{before, "v1", 0, 1023, 4095},
		{at, "v2", 7, 511, 1023},
		{after, "v2", 2, 170, 3},
		{snowfence.MustParseID("97301141913751557"), "v1", 0, 37, 5},
	}
	for _, c := range cases {
		d, err := s.Decode(c.id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Layout != c.layout || d.RegionNumber != c.region || d.Machine != c.machine || d.Sequence != c.sequence {
			t.Errorf("Decode(%d) = %+v, want %s region %d machine %d seq %d", c.id, d, c.layout, c.region, c.machine, c.sequence)
		}
	}
	if !(before < at) {
		t.Errorf("IDs across the cutover do not increase: %d then %d", before, at)
	}
}

func TestScheduleErrors(t *testing.T) {
	for _, text := range []string{
		"v3",
		"v1,v2",                      // cutover missing
		"v1@2027-01-01T00:00:00Z",    // first with a cutover
		"v1,v2@yesterday",            // not RFC 3339
		"v1,v2@2025-01-01T00:00:00Z", // before the epoch
		"v1,v2@2028-01-01T00:00:00Z,v1@2027-01-01T00:00:00Z", // decreasing
		"v1,v2@2028-01-01T00:00:00.0005Z",                    // not on a millisecond
	} {
		if _, err := snowfence.ParseSchedule(text); !errors.Is(err, snowfence.ErrInvalidLayout) {
			t.Errorf("ParseSchedule(%q) = %v, want ErrInvalidLayout", text, err)
		}
	}
	sony := snowfence.Layout{Name: "s", Epoch: snowfence.V1().Epoch, Unit: 10 * time.Millisecond, TimeBits: 41, MachineBits: 10, SequenceBits: 12}
	if _, err := snowfence.NewSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: mustTime(t, "2028-01-01T00:00:00Z"), Layout: sony}); !errors.Is(err, snowfence.ErrInvalidLayout) {
		t.Errorf("schedule mixing units: err = %v, want ErrInvalidLayout", err)
	}
}

// FuzzParseSchedule checks that the schedule parser never panics, and that
// whatever it accepts prints back to a text it reads as the same schedule.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"", "v1", "v2", "v1,v2@2028-01-01T00:00:00Z", "v1,v2@2028-01-01T00:00:00.001+02:00", "v1,,v2", "v1,v2@", "@", "v1,v2@2028-01-01T00:00:00Z,v1@2029-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := snowfence.ParseSchedule(text)
		if err != nil {
			if !errors.Is(err, snowfence.ErrInvalidLayout) {
				t.Fatalf("ParseSchedule(%q) error %v does not match ErrInvalidLayout", text, err)
			}
			return
		}
		again, err := snowfence.ParseSchedule(s.String())
		if err != nil || again.String() != s.String() {
			t.Fatalf("ParseSchedule(%q).String() = %q reads back as %q, %v", text, s.String(), again.String(), err)
		}
	})
}
