package explore

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// figures counts what a run did, across worlds, for the long mode's
// summary. Safe for concurrent use (one goroutine per store adds to it).
type figures struct {
	mu     sync.Mutex
	counts map[string]int
}

func newFigures() *figures { return &figures{counts: map[string]int{}} }

func (f *figures) add(name string, n int) {
	f.mu.Lock()
	f.counts[name] += n
	f.mu.Unlock()
}

func (f *figures) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(f.counts)) {
		fmt.Fprintf(&b, "  %-44s %d\n", k, f.counts[k])
	}
	return b.String()
}
