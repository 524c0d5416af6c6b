package oracle

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// benchIDs is how many IDs one iteration of the benchmarks writes.
const benchIDs = 1_000_000

// snowflakes returns n distinct IDs shaped like eight generators' output:
// 41-bit milliseconds, 10-bit node, 12-bit sequence, the nodes interleaved,
// so they mostly but not strictly increase.
func snowflakes(n int) []Issued {
	const nodes = 8
	const epochMs = int64(1) << 40
	ids := make([]Issued, n)
	for i := range ids {
		node, k := int64(i%nodes), int64(i/nodes)
		ms, s := epochMs+k/4096, k%4096
		ids[i] = Issued{ID: ms<<22 | node<<12 | s, Source: int32(node)}
	}
	return ids
}

// BenchmarkCopy measures the fast path alone: benchIDs IDs COPYed in
// batches straight into the primary-key table, over one connection or two
// in parallel, for several batch sizes.
func BenchmarkCopy(b *testing.B) {
	url := testURL(b)
	table := newTable(b)
	all := snowflakes(benchIDs)
	for _, writers := range []int{1, 2} {
		for _, size := range []int{10_000, 50_000, 100_000, 200_000} {
			b.Run(fmt.Sprintf("writers=%d/batch=%d", writers, size), func(b *testing.B) {
				var batches []*batch
				for i := 0; i < len(all); i += size {
					bt := &batch{seq: int64(len(batches) + 1)}
					bt.add(all[i:min(i+size, len(all))])
					batches = append(batches, bt)
				}
				ws := make([]*writer, writers)
				for i := range ws {
					conn, err := pgx.Connect(b.Context(), url)
					if err != nil {
						b.Fatalf("connect: %v", err)
					}
					defer conn.Close(context.Background())
					ws[i] = &writer{conn: conn, table: table}
				}
				if err := ws[0].create(b.Context()); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				var pgCPU time.Duration
				cpuOK := true
				for range b.N {
					b.StopTimer()
					if _, err := ws[0].conn.Exec(b.Context(), "TRUNCATE "+table); err != nil {
						b.Fatalf("truncate: %v", err)
					}
					before, err := serverCPU(b.Context(), ws)
					cpuOK = cpuOK && err == nil
					b.StartTimer()
					copyAll(b, ws, batches)
					b.StopTimer()
					after, err := serverCPU(b.Context(), ws)
					cpuOK = cpuOK && err == nil
					pgCPU += after - before
					b.StartTimer()
				}
				b.ReportMetric(float64(b.N)*benchIDs/b.Elapsed().Seconds(), "rows/s")
				if cpuOK {
					// Rows per second of server CPU: what the COPY costs,
					// whatever else the machine is doing.
					b.ReportMetric(float64(b.N)*benchIDs/pgCPU.Seconds(), "rows/pg-cpu-s")
				}
			})
		}
	}
}

// serverCPU returns the CPU time the backends of ws used so far.
func serverCPU(ctx context.Context, ws []*writer) (time.Duration, error) {
	var sum time.Duration
	for _, w := range ws {
		d, err := backendCPU(ctx, w.conn)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// copyAll writes batches through ws, each writer taking the next batch.
func copyAll(b *testing.B, ws []*writer, batches []*batch) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, len(ws))
	for i, w := range ws {
		wg.Go(func() {
			for j := next.Add(1) - 1; j < int64(len(batches)); j = next.Add(1) - 1 {
				if err := w.write(b.Context(), batches[j]); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatalf("write: %v", err)
		}
	}
	if n := ws[0].slowBatches + ws[len(ws)-1].slowBatches; n != 0 {
		b.Fatalf("%d batches took the slow path; the IDs should be distinct", n)
	}
}

// BenchmarkOracle measures the whole oracle with the default Config: Add
// of benchIDs IDs in slices of 1,000, then Close (the final count(*) and
// DROP included).
func BenchmarkOracle(b *testing.B) {
	url := testURL(b)
	table := newTable(b)
	all := snowflakes(benchIDs)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		o, err := Open(b.Context(), Config{URL: url, Table: table})
		if err != nil {
			b.Fatalf("Open: %v", err)
		}
		b.StartTimer()
		for i := 0; i < len(all); i += 1000 {
			if err := o.Add(all[i:min(i+1000, len(all))]); err != nil {
				b.Fatalf("Add: %v", err)
			}
		}
		res, err := o.Close(b.Context())
		if err != nil {
			b.Fatalf("Close: %v", err)
		}
		if res.Rows != benchIDs || res.Duplicates != 0 {
			b.Fatalf("Close = %+v, want %d rows and no duplicates", res, benchIDs)
		}
	}
	b.ReportMetric(float64(b.N)*benchIDs/b.Elapsed().Seconds(), "rows/s")
}
