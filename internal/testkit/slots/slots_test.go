package slots

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestTakeBounds: of tests taking the one slot, never two hold it at once,
// though each holds it until a second one has started and asked for it
// (go test runs at least two of them at once), and the slot is given back
// when each ends.
func TestTakeBounds(t *testing.T) {
	s := New(1)
	var now, peak, starts atomic.Int32
	second := make(chan struct{}) // closed when a second test has started
	t.Run("group", func(t *testing.T) {
		for range 4 {
			t.Run("", func(t *testing.T) {
				t.Parallel()
				if starts.Add(1) == 2 {
					close(second)
				}
				s.Take(t)
				n := now.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				defer now.Add(-1)
				// Hold the slot until a second test has started and
				// asked for it (a bounded wait, should go test run them
				// one at a time).
				select {
				case <-second:
				case <-time.After(5 * time.Second):
				}
			})
		}
	})
	if p := peak.Load(); p != 1 {
		t.Errorf("%d tests held the one slot at once, want 1", p)
	}
	if len(s) != 0 {
		t.Errorf("%d slots still taken after every test ended", len(s))
	}
}
