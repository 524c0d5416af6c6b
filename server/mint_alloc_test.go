//go:build !race

package server

// Built without the race detector only: under it sync.Pool drops items, so
// pooled buffers allocate. scripts/test runs the allocation checks in a
// pass of their own without -race (go test -run Alloc), so this test is
// never skipped, only absent from the race build.

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestMintAllocations checks that a one-ID request allocates nothing in the
// handler, without a body (the hot path) and with {}.
func TestMintAllocations(t *testing.T) {
	h := benchServer(t, false)
	for _, body := range []string{"", "{}"} {
		b := []byte(body)
		br := bytes.NewReader(nil)
		r := httptest.NewRequest(http.MethodPost, "/v1/ids", nil)
		if body != "" {
			r.Body = io.NopCloser(br)
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Type", "application/json")
		}
		w := newBenchWriter()
		allocs := testing.AllocsPerRun(200, func() {
			br.Reset(b)
			w.code = 0
			h.ServeHTTP(w, r)
		})
		if w.code != http.StatusOK {
			t.Fatalf("body %q: status %d", body, w.code)
		}
		if allocs != 0 {
			t.Errorf("body %q: %.1f allocations per request, want 0", body, allocs)
		}
	}
}
