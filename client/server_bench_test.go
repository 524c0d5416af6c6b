package client

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/snowfence/snowfence"
)

// benchServers runs f against the server the two benchmarks below take IDs
// from: $SNOWFENCE_BENCH_URL (a `snowfence serve` elsewhere, e.g. pinned to
// one core) or, without it, the real server package in process on
// loopback, once on the system clock (where one generator is held to
// 4,096 IDs a millisecond) and once on a fake clock that moves itself
// instead of waiting (so the HTTP path is the limit).
func benchServers(b *testing.B, f func(b *testing.B, url string)) {
	if u := os.Getenv("SNOWFENCE_BENCH_URL"); u != "" {
		b.Run("server=env", func(b *testing.B) { f(b, u) })
		return
	}
	for _, clock := range []string{"system", "fake"} {
		b.Run("clock="+clock, func(b *testing.B) { f(b, realServer(b, clock == "fake").URL) })
	}
}

// benchHTTP is the HTTP client of both benchmarks: the transport the Client
// builds for itself (a clone of http.DefaultTransport, keep-alive).
func benchHTTP() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// BenchmarkClientServer is one Client taking b.N IDs with Next from one
// server; compare its IDs/s with BenchmarkBatchRequests (the target is at
// least 0.9 times).
func BenchmarkClientServer(b *testing.B) { benchServers(b, benchClientServer) }

func benchClientServer(b *testing.B, url string) {
	hc := benchHTTP()
	defer hc.CloseIdleConnections()
	c := newClient(b, Config{Endpoints: []string{url}, HTTPClient: hc})
	ctx := context.Background()
	if _, err := c.Next(ctx); err != nil { // connect before timing
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "IDs/s")
	st := c.Stats()
	b.ReportMetric(float64(st.Received)/float64(max(st.Requests, 1)), "IDs/request")
}

// BenchmarkBatchRequests is the baseline: b.N IDs as sequential POST
// /v1/ids?count=1000 requests on one kept-alive connection, read and parsed
// as the Client does, handing out nothing.
func BenchmarkBatchRequests(b *testing.B) { benchServers(b, benchBatchRequests) }

func benchBatchRequests(b *testing.B, base string) {
	hc := benchHTTP()
	defer hc.CloseIdleConnections()
	url := base + "/v1/ids?count="
	body := make([]byte, 0, maxBatchBody)
	ids := make([]int64, 0, snowfence.MaxBatch)
	get := func(n int) {
		req, err := http.NewRequest(http.MethodPost, url+strconv.Itoa(n), nil)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err = readBody(resp.Body, body[:0], maxBatchBody)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d, %v", resp.StatusCode, err)
		}
		if _, bad := parseBatch(ids[:0], body, n); bad != "" {
			b.Fatal(bad)
		}
	}
	get(1) // connect before timing
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += snowfence.MaxBatch {
		get(min(snowfence.MaxBatch, b.N-done))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "IDs/s")
}
