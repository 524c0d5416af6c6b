package snowfence

import (
	"testing"
)

// fixedClock reads one millisecond for ever.
type fixedClock struct{ systemClock }

func (fixedClock) Now() Reading { return Reading{WallMs: 1_790_000_000_000} }

// A counter at its capacity runs the timestamp one millisecond ahead of the
// clock and is seeded again; order holds throughout.
func TestUUIDv7CounterCapacity(t *testing.T) {
	g := NewUUIDGenerator(fixedClock{})
	prev := g.Next()
	g.counter = uuidCounterMax - 2
	for i := range 10 {
		u := g.Next()
		if prev.Compare(u) >= 0 {
			t.Fatalf("UUID %d %s not above %s", i, u, prev)
		}
		prev = u
	}
	tm, _ := prev.Time()
	if got, want := tm.UnixMilli(), int64(1_790_000_000_001); got != want {
		t.Errorf("after the counter's capacity the timestamp is %d, want %d (one ahead)", got, want)
	}
	if g.counter > uuidSeedMask+10 {
		t.Errorf("counter %d was not seeded again", g.counter)
	}
}

// Instants outside 48 bits are clamped, not wrapped.
func TestUUIDv7Clamp(t *testing.T) {
	g := NewUUIDGenerator(fixedClock{})
	if u := g.next(-5); u.unixMs() != 0 {
		t.Errorf("before 1970: %d ms", u.unixMs())
	}
	if u := g.next(1 << 50); u.unixMs() != uuidMaxMs {
		t.Errorf("past 48 bits: %d ms", u.unixMs())
	}
	if u := g.next(uuidMaxMs); u.unixMs() != uuidMaxMs || u.Version() != 7 {
		t.Errorf("at the end: %s", u)
	}
}

// TestUUIDv7CounterFullAtLastMillisecond: UUIDs stay sorted when the counter
// fills at the last millisecond of the 48 bits. A clock that reads at or past
// the end of the 48 bits (a fake or broken clock; the generator clamps it and
// never reseeds while it stays there) pins the timestamp at uuidMaxMs. Once
// the counter fills, next "advances" the timestamp with min(lastMs+1,
// uuidMaxMs), which leaves it where it is, and reseeded the counter below
// where it was: the next UUID sorted before the previous one.
func TestUUIDv7CounterFullAtLastMillisecond(t *testing.T) {
	g := NewUUIDGenerator(fixedClock{})
	g.next(uuidMaxMs)
	g.counter = uuidCounterMax - 1
	prev := g.next(uuidMaxMs) // counter now at its capacity
	for i := range 3 {
		u := g.next(uuidMaxMs)
		if prev.Compare(u) >= 0 {
			t.Fatalf("UUID %d after the counter filled at the last millisecond: %s is not above %s", i, u, prev)
		}
		prev = u
	}
}
