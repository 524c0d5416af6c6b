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
