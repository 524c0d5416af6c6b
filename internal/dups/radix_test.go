package dups

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		gen  func() uint64
		n    int
	}{
		{"small", rng.Uint64, 100},
		{"random", rng.Uint64, 100_000},
		{"shared top bytes", func() uint64 { return 0x01a0dd96_00000000 | rng.Uint64()>>24 }, 50_000},
		{"few values", func() uint64 { return rng.Uint64N(7) }, 20_000},
		{"one value", func() uint64 { return 42 }, 5_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := make([]uint64, tt.n)
			for i := range ids {
				ids[i] = tt.gen()
			}
			want := slices.Clone(ids)
			slices.Sort(want)
			sortIDs(ids, make([]uint64, len(ids)))
			if !slices.Equal(ids, want) {
				t.Errorf("sortIDs differs from slices.Sort")
			}
		})
	}
}
