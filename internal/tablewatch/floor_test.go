package tablewatch

import (
	"testing"
	"time"
)

// TestFloorAndFence: the first claim after a notice sets the floor, which
// every later one keeps; leases claimed before are fenced, and so is one
// claimed while the notice came.
func TestFloorAndFence(t *testing.T) {
	var w Watch
	f, gen := w.Floor(1000, time.Minute)
	if f != 0 || gen != 0 || !w.Remember("a", gen) {
		t.Fatalf("before any notice: floor %d, generation %d", f, gen)
	}
	_, gen = w.Floor(1000, time.Minute) // a claim in flight when…
	if !w.Notice(0, "a sign") || w.Notice(0, "the same sign, seen by an answer sent before") {
		t.Fatal("Notice")
	}
	if w.Remember("b", gen) {
		t.Error("a claim made while a restore was noticed is not fenced")
	}
	if _, _, fenced := w.Restored("a"); !fenced {
		t.Error("a lease claimed before the notice is not fenced")
	}
	if _, _, fenced := w.Restored("never-seen"); !fenced {
		t.Error("a lease not claimed through the watch is not fenced once a restore was noticed")
	}
	f, gen = w.Floor(5000, time.Minute)
	if f != 5000+60_000 || gen != 1 {
		t.Fatalf("first claim after the notice: floor %d generation %d, want %d and 1", f, gen, 5000+60_000)
	}
	if !w.Remember("c", gen) {
		t.Error("a claim after the notice is refused")
	}
	if _, _, fenced := w.Restored("c"); fenced {
		t.Error("a lease claimed after the notice is fenced")
	}
	if f2, _ := w.Floor(9000, time.Minute); f2 != f {
		t.Errorf("a later claim's floor %d, want the first one's %d", f2, f)
	}
	if what, _ := w.Noticed(); what != "a sign" {
		t.Errorf("Noticed = %q", what)
	}
}
