package client

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

// warmClient is a client fed by an in-memory transport whose IDs do not
// expire during the benchmark, and which refills only when it is empty
// (LowWater 1) and then fills all its 2^20 IDs.
func warmClient(b *testing.B) *Client {
	b.Helper()
	return newClient(b, Config{
		Endpoints:  []string{"http://ids.invalid"},
		HTTPClient: &http.Client{Transport: newMemTransport()},
		MaxAge:     time.Hour,
		MinRefill:  1 << 20,
		MaxBuffer:  1 << 20,
		LowWater:   1,
	})
}

// fill refills c's buffer through its transport and waits for the refill
// to end; it returns how many IDs the buffer holds.
func fill(c *Client) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ended := c.ended
	if !c.refilling {
		c.startRefillLocked()
	}
	for c.ended == ended || c.refilling {
		c.waiters++
		w := c.wake
		c.mu.Unlock()
		<-w
		c.mu.Lock()
		c.waiters--
	}
	return c.buf.len()
}

// BenchmarkNextWarm is Next from a warm buffer: the per-ID cost of the
// client once the IDs are in hand (target ≤ 100 ns and 0 allocations). The
// timer stops while the buffer is refilled, so ns/op is the hand-out
// alone; BenchmarkNextSteady includes the refills.
func BenchmarkNextWarm(b *testing.B) {
	c := warmClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.StopTimer()
	for done := 0; done < b.N; {
		n := min(fill(c)-1, b.N-done) // leave one: the refill starts at one
		b.StartTimer()
		for range n {
			if _, err := c.Next(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		done += n
	}
}

// BenchmarkNextSteady is Next with the refills running beside it, through
// the in-memory transport and the parser: the client's whole cost per ID.
func BenchmarkNextSteady(b *testing.B) {
	c := newClient(b, Config{
		Endpoints:  []string{"http://ids.invalid"},
		HTTPClient: &http.Client{Transport: newMemTransport()},
		MaxAge:     time.Hour,
	})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNextWarmParallel is Next from every P at once, with the refills
// running beside it (RunParallel cannot stop the timer for them).
func BenchmarkNextWarmParallel(b *testing.B) {
	c := newClient(b, Config{
		Endpoints:  []string{"http://ids.invalid"},
		HTTPClient: &http.Client{Transport: newMemTransport()},
		MaxAge:     time.Hour,
		MinRefill:  1 << 19,
		MaxBuffer:  1 << 20,
		LowWater:   1 << 19,
	})
	fill(c)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := c.Next(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAppendNWarm takes 100 IDs a call from a warm buffer; ns/op is
// per ID.
func BenchmarkAppendNWarm(b *testing.B) {
	c := warmClient(b)
	ctx := context.Background()
	dst := make([]snowfence.ID, 0, 100)
	b.ReportAllocs()
	b.StopTimer()
	for done := 0; done < b.N; {
		n := min(fill(c)-1, b.N-done)
		b.StartTimer()
		for k := 0; k < n; k += 100 {
			var err error
			if dst, err = c.AppendN(ctx, dst[:0], min(100, n-k)); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		done += n
	}
}
