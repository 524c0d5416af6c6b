package dups

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"testing"
)

// findAll adds ids to a Finder with cfg, in batches, and returns the
// duplicates it reports and its partition count.
func findAll(t *testing.T, cfg Config, ids []uint64) (map[uint64]int64, int) {
	t.Helper()
	if cfg.TempDir == "" {
		cfg.TempDir = t.TempDir()
	}
	f, err := NewFinder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 0; i < len(ids); i += 1000 {
		if err := f.Add(ids[i:min(i+1000, len(ids))]); err != nil {
			t.Fatal(err)
		}
	}
	got := map[uint64]int64{}
	err = f.Duplicates(context.Background(), func(id uint64, n int64) error {
		if _, seen := got[id]; seen {
			t.Errorf("ID %d reported twice", id)
		}
		got[id] = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p := f.Partitions()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(cfg.TempDir); len(left) != 0 {
		t.Errorf("Close left %d entries in the temporary directory", len(left))
	}
	return got, p
}

// mapDuplicates is the reference: every ID counted in a map.
func mapDuplicates(ids []uint64) map[uint64]int64 {
	counts := map[uint64]int64{}
	for _, v := range ids {
		counts[v]++
	}
	maps.DeleteFunc(counts, func(_ uint64, n int64) bool { return n < 2 })
	return counts
}

// TestFinderAgainstMap is the property test: on random inputs (seeded),
// in memory and partitioned, the Finder reports exactly the IDs a map
// counts more than once, with their counts.
func TestFinderAgainstMap(t *testing.T) {
	tests := []struct {
		name     string
		memory   int64
		n        int
		universe uint64 // IDs drawn from [base, base+universe)
		wantPart bool
	}{
		{"in memory", 0, 50_000, 80_000, false},
		{"partitioned, many partitions", MinMemory, 200_000, 300_000, true},
		{"partitioned, dense duplicates", MinMemory, 100_000, 20_000, true},
		{"partitioned, no duplicates", MinMemory, 100_000, 0, true},
	}
	for seed := uint64(1); seed <= 3; seed++ {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 99))
				base := uint64(97301141913751557)
				ids := make([]uint64, tt.n)
				for i := range ids {
					if tt.universe == 0 {
						ids[i] = base + uint64(i)*4096
					} else {
						ids[i] = base + rng.Uint64N(tt.universe)
					}
				}
				n := int64(len(ids))
				got, parts := findAll(t, Config{Memory: tt.memory, ExpectedIDs: func(int64) int64 { return n }}, ids)
				if want := mapDuplicates(ids); !maps.Equal(got, want) {
					t.Errorf("seed %d: %d duplicates found, the map counts %d (or the counts differ)", seed, len(got), len(want))
				}
				if tt.wantPart && parts < 32 || !tt.wantPart && parts != 0 {
					t.Errorf("seed %d: %d partitions", seed, parts)
				}
			})
		}
	}
}

// TestFinderSkewed forces the external sort: one ID copied so often that
// its partition does not fit the data area.
func TestFinderSkewed(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var ids []uint64
	for i := range 60_000 {
		ids = append(ids, rng.Uint64N(1<<40))
		if i%2 == 0 {
			ids = append(ids, 121150311008464896)
		}
	}
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	got, parts := findAll(t, Config{Memory: MinMemory}, ids)
	if parts == 0 {
		t.Fatal("not partitioned")
	}
	if want := mapDuplicates(ids); !maps.Equal(got, want) {
		t.Errorf("%d duplicates found, the map counts %d; the copied ID: %d, want 30000", len(got), len(want), got[121150311008464896])
	}
}

func TestFinderMemoryTooSmall(t *testing.T) {
	if _, err := NewFinder(Config{Memory: MinMemory - 1}); !errors.Is(err, ErrMemory) {
		t.Errorf("NewFinder with a budget below MinMemory: %v, want ErrMemory", err)
	}
}
