package bench

import (
	"context"
	"testing"
	"time"

	"github.com/bwmarrin/snowflake"
	"github.com/snowfence/snowfence"
	"github.com/sony/sonyflake/v2"
)

// v1Limit is the bit-budget limit of one v1 generator: 4,096 IDs per ms.
const v1Limit = 4096 * 1000

// wide is a layout whose 22-bit sequence never runs out at these rates, so
// the cost of a call that does not wait can be measured.
func wide() snowfence.Layout {
	return snowfence.Layout{Name: "wide", Epoch: snowfence.V1().Epoch, TimeBits: 41, SequenceBits: 22}
}

func newGen(b *testing.B, l snowfence.Layout) *snowfence.Generator {
	b.Helper()
	g, err := snowfence.New(snowfence.Config{
		Lease:       snowfence.Static(0, 0),
		Schedule:    snowfence.MustSchedule(snowfence.Step{Layout: l}),
		ClockPolicy: snowfence.ClockOff,
	})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// reportRate adds IDs/s and the ratio to the v1 bit-budget limit.
func reportRate(b *testing.B, ids int, start time.Time) {
	rate := float64(ids) / time.Since(start).Seconds()
	b.ReportMetric(rate, "IDs/s")
	b.ReportMetric(rate/v1Limit, "of-v1-limit")
}

// BenchmarkTimeNow is the yardstick: a bare time.Now().
func BenchmarkTimeNow(b *testing.B) {
	b.ReportAllocs()
	var sink int64
	for b.Loop() {
		sink += time.Now().UnixMilli()
	}
	_ = sink
}

// (a) Sustained IDs/s from one generator on the real clock, v1 layout.
func BenchmarkSustainedV1(b *testing.B) {
	ctx := context.Background()
	g := newGen(b, snowfence.V1())
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := g.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N, start)
}

func BenchmarkSustainedBwmarrin(b *testing.B) {
	node, err := snowflake.NewNode(0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		_ = node.Generate()
	}
	reportRate(b, b.N, start)
}

// Sonyflake's 8-bit sequence in 10 ms units caps it at 25,600 IDs/s; its
// figure is here for the side-by-side table, not as a like-for-like rate.
func BenchmarkSustainedSonyflake(b *testing.B) {
	sf, err := sonyflake.New(sonyflake.Settings{MachineID: func() (int, error) { return 1, nil }})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := sf.NextID(); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N, start)
}

// (b) One call that never has to wait.
func BenchmarkNextNoWait(b *testing.B) {
	ctx := context.Background()
	g := newGen(b, wide())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNextNoWaitParallel(b *testing.B) {
	ctx := context.Background()
	g := newGen(b, wide())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := g.Next(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// (c) NextN(1000) when it fits in one millisecond's sequence.
func BenchmarkNextN1000(b *testing.B) {
	ctx := context.Background()
	g := newGen(b, wide())
	buf := make([]snowfence.ID, 0, snowfence.MaxBatch)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		var err error
		if buf, err = g.AppendN(ctx, buf[:0], 1000); err != nil {
			b.Fatal(err)
		}
	}
	rate := float64(b.N) * 1000 / time.Since(start).Seconds()
	b.ReportMetric(rate, "IDs/s")
}

// NextN(1000) on v1, where about every fourth batch crosses into the next
// millisecond: the batch path's sustained rate against the bit budget.
func BenchmarkNextN1000V1(b *testing.B) {
	ctx := context.Background()
	g := newGen(b, snowfence.V1())
	buf := make([]snowfence.ID, 0, snowfence.MaxBatch)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		var err error
		if buf, err = g.AppendN(ctx, buf[:0], 1000); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N*1000, start)
}

// BenchmarkClockPolicy is the per-ID cost of each clock policy on one
// generator on the real clock, in the wide layout (v1's 4,096 IDs per ms
// would hide the check behind the sequence's waits): off reads nothing; warn and require
// (the library's default) read the clock state at most once a second (here
// a stand-in that reports a synchronised clock within 1 ms, since this
// benchmark measures the policy's check, not the host's NTP state; the
// real read is one adjtimex(2) call a second) and check for a forward jump
// on every call.
func BenchmarkClockPolicy(b *testing.B) {
	synced := func() (snowfence.ClockStatus, error) {
		return snowfence.ClockStatus{Synchronized: true, MaxError: time.Millisecond}, nil
	}
	for _, p := range []snowfence.ClockPolicy{snowfence.ClockOff, snowfence.ClockWarn, snowfence.ClockRequire} {
		b.Run(string(p), func(b *testing.B) {
			g, err := snowfence.New(snowfence.Config{Lease: snowfence.Static(0, 0), ClockPolicy: p, ClockStatus: synced,
				Schedule: snowfence.MustSchedule(snowfence.Step{Layout: wide()})})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				if _, err := g.Next(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "IDs/s")
		})
	}
}
