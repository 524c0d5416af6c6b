package dups

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/snowfence/snowfence"
)

// benchIDs is n v1 IDs of 8 holders over about a day, interleaved, seeded.
func benchIDs(n int) []uint64 {
	rng := rand.New(rand.NewPCG(1, 1))
	l := snowfence.V1()
	ticks := make([]int64, 8)
	for i := range ticks {
		ticks[i] = 28_684_800_000 // 2026-11-30
	}
	ids := make([]uint64, n)
	for i := range ids {
		m := rng.IntN(8)
		ticks[m] += 1 + rng.Int64N(13)
		id, _ := l.Compose(ticks[m], 0, 17+m, 0)
		ids[i] = uint64(id)
	}
	return ids
}

// BenchmarkFinder measures the in-memory core: add IDs, sort, report.
func BenchmarkFinder(b *testing.B) {
	ids := benchIDs(1 << 22)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f, err := NewFinder(Config{})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(ids); i += batchLen {
			f.Add(ids[i:min(i+batchLen, len(ids))])
		}
		f.Duplicates(context.Background(), func(uint64, int64) error { return nil })
		f.Close()
	}
	b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "IDs/s")
}

// BenchmarkScan measures the text path too: a file of IDs, one per line.
func BenchmarkScan(b *testing.B) {
	ids := benchIDs(1 << 22)
	var text []byte
	for _, v := range ids {
		text = strconv.AppendUint(text, v, 10)
		text = append(text, '\n')
	}
	p := filepath.Join(b.TempDir(), "ids.txt")
	if err := os.WriteFile(p, text, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Scan(context.Background(), Options{}, []string{p}, func(Duplicate) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "IDs/s")
}
