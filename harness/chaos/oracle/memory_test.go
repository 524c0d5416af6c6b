package oracle

import (
	"errors"
	"slices"
	"testing"
)

// TestDuplicatesInMemory checks the in-memory count and examples.
func TestDuplicatesInMemory(t *testing.T) {
	tests := []struct {
		name     string
		ids      []int64
		max      int
		n        int64
		examples []int64
	}{
		{name: "empty", ids: nil, max: 10},
		{name: "unique", ids: []int64{3, 1, 2}, max: 10},
		{name: "one pair", ids: []int64{5, 1, 5}, max: 10, n: 1, examples: []int64{5}},
		{name: "three times", ids: []int64{7, 7, 2, 7}, max: 10, n: 2, examples: []int64{7}},
		{name: "pairs and triples", ids: []int64{9, 4, 9, 4, 4, 1, -3, -3}, max: 10, n: 4, examples: []int64{-3, 4, 9}},
		{name: "examples capped", ids: []int64{3, 3, 2, 2, 1, 1}, max: 2, n: 3, examples: []int64{1, 2}},
		{name: "no examples", ids: []int64{3, 3}, max: 0, n: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ex := Duplicates(slices.Clone(tt.ids), tt.max)
			if n != tt.n || !slices.Equal(ex, tt.examples) {
				t.Errorf("Duplicates(%v, %d) = %d %v, want %d %v", tt.ids, tt.max, n, ex, tt.n, tt.examples)
			}
		})
	}
}

// TestOpenConfig checks that Open refuses unusable configurations before
// connecting, and reports a server it cannot reach.
func TestOpenConfig(t *testing.T) {
	const url = "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=5"
	tests := []struct {
		name    string
		cfg     Config
		invalid bool
	}{
		{name: "no URL", cfg: Config{}, invalid: true},
		{name: "table with capitals", cfg: Config{URL: url, Table: "Chaos"}, invalid: true},
		{name: "table with a dot", cfg: Config{URL: url, Table: "public.chaos"}, invalid: true},
		{name: "negative batch", cfg: Config{URL: url, Batch: -1}, invalid: true},
		{name: "queue under two batches", cfg: Config{URL: url, Batch: 10, MaxQueued: 19}, invalid: true},
		{name: "nothing listening", cfg: Config{URL: url}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Open(t.Context(), tt.cfg)
			if err == nil {
				o.Close(t.Context())
				t.Fatalf("Open(%+v) succeeded, want an error", tt.cfg)
			}
			if errors.Is(err, ErrConfig) != tt.invalid {
				t.Errorf("Open(%+v) = %v; wraps ErrConfig: %v, want %v", tt.cfg, err, !tt.invalid, tt.invalid)
			}
		})
	}
}
