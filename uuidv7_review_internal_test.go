package snowfence

import "testing"

// TestReviewUUIDv7CounterFullAtLastMillisecond: a clock that reads at or
// past the end of the 48 bits (a fake or broken clock; the generator
// clamps it and never reseeds while it stays there) pins the timestamp at
// uuidMaxMs. Once the counter fills, next "advances" the timestamp with
// min(lastMs+1, uuidMaxMs), which leaves it where it is, and reseeds the
// counter below where it was: the next UUID sorts before the previous one.
func TestReviewUUIDv7CounterFullAtLastMillisecond(t *testing.T) {
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
