package server

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

// benchWriter is a reusable http.ResponseWriter that discards the body, so
// benchmarks measure the handler and not a recorder.
type benchWriter struct {
	h    http.Header
	code int
	n    int
}

func newBenchWriter() *benchWriter { return &benchWriter{h: http.Header{}} }

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(code int) {
	w.code = code
}
func (w *benchWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.n += len(b)
	return len(b), nil
}

// benchServer returns a handler on a generator with the system clock (or a
// fake one that moves itself when waited on).
func benchServer(b testing.TB, fake bool) http.Handler {
	b.Helper()
	cfg := snowfence.Config{Lease: snowfence.Static(37, 0), ClockPolicy: snowfence.ClockOff}
	if fake {
		clk := fakeclock.New(exampleTime)
		clk.AutoAdvance(true)
		cfg.Clock = clk
	}
	gen, err := snowfence.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Generator: gen, Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	return s.Handler()
}

// BenchmarkConstHandler is the floor: a handler that writes a fixed body of
// the single-ID response's size through the same writer.
func BenchmarkConstHandler(b *testing.B) {
	body := []byte(`{"id":"97301141913751557","id_num":97301141913751557}`)
	ct := []string{"application/json"}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = ct
		w.Write(body)
	})
	r := httptest.NewRequest(http.MethodPost, "/v1/ids", nil)
	w := newBenchWriter()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}

func BenchmarkSingleID(b *testing.B) {
	h := benchServer(b, false)
	r := httptest.NewRequest(http.MethodPost, "/v1/ids", nil)
	w := newBenchWriter()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
	if w.code != http.StatusOK {
		b.Fatalf("status %d", w.code)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "IDs/s")
}

func BenchmarkSingleIDParallel(b *testing.B) {
	h := benchServer(b, false)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest(http.MethodPost, "/v1/ids", nil)
		w := newBenchWriter()
		for pb.Next() {
			h.ServeHTTP(w, r)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "IDs/s")
}

// BenchmarkBatch1000 mints batches of 1,000 through POST /v1/ids:batch. On
// the system clock one generator is held to 4,096 IDs per millisecond, so
// the "fake" clock variant (which moves itself instead of waiting) shows
// the handler's own cost.
func BenchmarkBatch1000(b *testing.B) {
	for _, clock := range []string{"system", "fake"} {
		b.Run("clock="+clock, func(b *testing.B) {
			h := benchServer(b, clock == "fake")
			body := []byte(`{"count":1000}`)
			br := bytes.NewReader(body)
			r := httptest.NewRequest(http.MethodPost, "/v1/ids:batch", nil)
			r.Header.Set("Content-Type", "application/json")
			r.Body = io.NopCloser(br)
			r.ContentLength = int64(len(body))
			w := newBenchWriter()
			b.ReportAllocs()
			for b.Loop() {
				br.Reset(body)
				h.ServeHTTP(w, r)
			}
			if w.code != http.StatusOK {
				b.Fatalf("status %d", w.code)
			}
			b.ReportMetric(float64(b.N)*snowfence.MaxBatch/b.Elapsed().Seconds(), "IDs/s")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	h := benchServer(b, false)
	r := httptest.NewRequest(http.MethodGet, "/v1/ids/"+example+"/decode", nil)
	w := newBenchWriter()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
