package pgstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// BenchmarkClaimRelease measures one claim and one release of a number
// (the claim statement, with its journal entry, and the release, with
// its ending), on numbers spread over 1024 so that successive claims
// rarely meet on a row. The range read that precedes the claim statement
// is included: it is what Claim costs.
func BenchmarkClaimRelease(b *testing.B) {
	pool := testPool(b, 8)
	s := quietStore(b, pool, newTable(b, pool))
	nowMs := time.Now().UnixMilli()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		n := i % 1024
		l, err := s.Claim(b.Context(), lease.ClaimRequest{Holder: "bench", Range: lease.Range{Lo: n, Hi: n}, NowMs: nowMs + int64(i),
			LeaseFor: 10 * time.Second, MaxAhead: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Release(b.Context(), l, l.StartMs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimReleaseParallel is BenchmarkClaimRelease from several
// goroutines at once, each on numbers of its own.
func BenchmarkClaimReleaseParallel(b *testing.B) {
	pool := testPool(b, 8)
	s := quietStore(b, pool, newTable(b, pool))
	nowMs := time.Now().UnixMilli()
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		base := int(next.Add(1)) * 4096
		for i := 0; pb.Next(); i++ {
			n := base + i%1024
			l, err := s.Claim(b.Context(), lease.ClaimRequest{Holder: fmt.Sprintf("bench-%d", base), Range: lease.Range{Lo: n, Hi: n},
				NowMs: nowMs + int64(i), LeaseFor: 10 * time.Second, MaxAhead: time.Hour})
			if err != nil {
				b.Error(err)
				return
			}
			if err := s.Release(b.Context(), l, l.StartMs); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
