// Package slots bounds how many of a package's tests of one kind run at
// once, whatever go test's -parallel: tests that each start servers whose
// timing they measure (elections, dial timeouts) starve one another on a
// 2-core machine when too many run together.
package slots

import "testing"

// Slots is a number of places for tests of one kind: New(n).
type Slots chan struct{}

// New returns n slots.
func New(n int) Slots { return make(Slots, n) }

// Take waits for a free slot and gives it back when t ends; it fails t if
// t ends first. Call it after t.Parallel, so that a waiting test holds no
// parallel place of go test's.
func (s Slots) Take(t *testing.T) {
	t.Helper()
	select {
	case s <- struct{}{}:
	case <-t.Context().Done():
		t.Fatal("slots: the test ended before a slot was free")
	}
	t.Cleanup(func() { <-s })
}
