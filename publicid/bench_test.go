package publicid

import "testing"

func BenchmarkSeal(b *testing.B) {
	ks := testKeyset(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := ks.Seal("order", exampleID+1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendSeal seals into a reused buffer: no allocation.
func BenchmarkAppendSeal(b *testing.B) {
	ks := testKeyset(b)
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = ks.AppendSeal(buf[:0], "order", exampleID); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	ks := testKeyset(b)
	s, _ := ks.Seal("order", exampleID)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ks.Open(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenForged opens a text that does not decrypt: the error path.
func BenchmarkOpenForged(b *testing.B) {
	ks := testKeyset(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ks.Open("order_20000000000000000000000000a"); err == nil {
			b.Fatal("opened")
		}
	}
}

func BenchmarkOpenParallel(b *testing.B) {
	ks := testKeyset(b)
	s, _ := ks.Seal("order", exampleID)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := ks.Open(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkNewRandom(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewRandom("order"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewRandomString is NewRandom and its text, as a caller storing
// it does.
func BenchmarkNewRandomString(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewRandom("order")
		if err != nil {
			b.Fatal(err)
		}
		_ = r.String()
	}
}

func BenchmarkParseRandom(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRandom("order_01h455vb4pex5vsknk084sn02q"); err != nil {
			b.Fatal(err)
		}
	}
}
