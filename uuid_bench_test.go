package snowfence_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/snowfence/snowfence"
)

// UUIDv7 generation, ours on the system clock beside google/uuid's NewV7
// in the same run, serial and parallel.

func BenchmarkUUIDv7(b *testing.B) {
	g := snowfence.NewUUIDGenerator(nil)
	b.ReportAllocs()
	var sink snowfence.UUID
	for b.Loop() {
		sink = g.Next()
	}
	_ = sink
}

func BenchmarkUUIDv7Parallel(b *testing.B) {
	g := snowfence.NewUUIDGenerator(nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var sink snowfence.UUID
		for pb.Next() {
			sink = g.Next()
		}
		_ = sink
	})
}

func BenchmarkGoogleUUIDNewV7(b *testing.B) {
	b.ReportAllocs()
	var sink uuid.UUID
	for b.Loop() {
		u, err := uuid.NewV7()
		if err != nil {
			b.Fatal(err)
		}
		sink = u
	}
	_ = sink
}

func BenchmarkGoogleUUIDNewV7Parallel(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var sink uuid.UUID
		for pb.Next() {
			u, err := uuid.NewV7()
			if err != nil {
				b.Error(err)
				return
			}
			sink = u
		}
		_ = sink
	})
}

// BenchmarkUUIDv7AppendN is the cost per UUID of a batch of 1,000, as
// POST /v1/uuids?count=1000 makes it.
func BenchmarkUUIDv7AppendN(b *testing.B) {
	g := snowfence.NewUUIDGenerator(nil)
	buf := make([]snowfence.UUID, 0, 1000)
	b.ReportAllocs()
	for b.Loop() {
		buf = g.AppendN(buf[:0], 1000)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/UUID")
}

func BenchmarkToUUID(b *testing.B) {
	s := snowfence.DefaultSchedule()
	id := snowfence.MustParseID("97301141913751557")
	b.ReportAllocs()
	var sink snowfence.UUID
	for b.Loop() {
		u, err := s.ToUUID(id)
		if err != nil {
			b.Fatal(err)
		}
		sink = u
	}
	_ = sink
}

func BenchmarkFromUUID(b *testing.B) {
	s := snowfence.DefaultSchedule()
	u, _ := s.ToUUID(snowfence.MustParseID("97301141913751557"))
	b.ReportAllocs()
	var sink snowfence.ID
	for b.Loop() {
		id, err := s.FromUUID(u)
		if err != nil {
			b.Fatal(err)
		}
		sink = id
	}
	_ = sink
}

func BenchmarkParseUUID(b *testing.B) {
	const text = "01a0dd96-2600-802b-8d76-fc0012802b88"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := snowfence.ParseUUID(text); err != nil {
			b.Fatal(err)
		}
	}
}
