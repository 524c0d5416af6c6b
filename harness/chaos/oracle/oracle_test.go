package oracle

import (
	"reflect"
	"slices"
	"testing"
)

// TestNoDuplicates adds IDs of three sources, interleaved in chunks that
// do not line up with the batches: nothing is a duplicate, every ID is a
// row, and the table is dropped at Close.
func TestNoDuplicates(t *testing.T) {
	o := openOracle(t, Config{Batch: 1000, MaxQueued: 4000})
	const perSource, chunk = 8500, 700
	var srcs [3][]Issued
	for s := range srcs {
		srcs[s] = seq(int32(s), int64(s), 3, perSource) // disjoint: ≡ s mod 3
	}
	for i := 0; i < perSource; i += chunk {
		for s := range srcs {
			if err := o.Add(srcs[s][i:min(i+chunk, perSource)]); err != nil {
				t.Fatalf("Add: %v", err)
			}
		}
	}
	res := closeOracle(t, o)
	want := Result{Received: 3 * perSource, Rows: 3 * perSource}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("Close = %+v, want %+v", res, want)
	}
	if tableExists(t, testConn(t), o.cfg.Table) {
		t.Errorf("table %s still exists after Close without Keep", o.cfg.Table)
	}
}

// TestDuplicates puts repeated IDs across batches, inside one batch and
// three times, in batches of 4, and checks the exact count, the examples
// with their sources, and that Duplicates in memory agrees.
func TestDuplicates(t *testing.T) {
	type ids = []Issued
	many := append(seq(0, 100, 1, 12), seq(1, 100, 1, 12)...)
	var manyEx []Duplicate
	for id := int64(100); id < 110; id++ {
		manyEx = append(manyEx, Duplicate{ID: id, Sources: []int32{0, 1}})
	}
	tests := []struct {
		name       string
		adds       []ids // one Add each; batches hold 4 IDs
		dups, rows int64
		slow       int64
		examples   []Duplicate
	}{{
		name: "across two batches",
		adds: []ids{{{1, 0}, {2, 0}, {3, 0}, {4, 0}}, {{2, 1}, {5, 1}, {6, 1}, {7, 1}}},
		dups: 1, rows: 7, slow: 1,
		examples: []Duplicate{{ID: 2, Sources: []int32{0, 1}}},
	}, {
		name: "inside one batch",
		adds: []ids{{{1, 0}, {2, 0}, {2, 1}, {3, 0}}},
		dups: 1, rows: 3, slow: 1,
		examples: []Duplicate{{ID: 2, Sources: []int32{0, 1}}},
	}, {
		name: "one source twice",
		adds: []ids{{{1, 0}, {2, 0}}, {{2, 0}, {3, 0}}},
		dups: 1, rows: 3, slow: 1,
		examples: []Duplicate{{ID: 2, Sources: []int32{0, 0}}},
	}, {
		name: "three times across three batches",
		adds: []ids{
			{{1, 0}, {2, 0}, {3, 0}, {4, 0}},
			{{2, 1}, {5, 1}, {6, 1}, {7, 1}},
			{{2, 2}, {8, 2}, {9, 2}, {10, 2}},
		},
		dups: 2, rows: 10, slow: 2,
		examples: []Duplicate{{ID: 2, Sources: []int32{0, 1, 2}}},
	}, {
		name: "three times inside one batch",
		adds: []ids{{{1, 0}, {5, 0}, {5, 1}, {5, 2}}},
		dups: 2, rows: 2, slow: 1,
		examples: []Duplicate{{ID: 5, Sources: []int32{0, 1, 2}}},
	}, {
		name: "twice in a batch after once before",
		adds: []ids{{{1, 0}, {2, 0}, {3, 0}, {5, 0}}, {{5, 1}, {5, 2}, {6, 1}, {7, 2}}},
		dups: 2, rows: 6, slow: 1,
		examples: []Duplicate{{ID: 5, Sources: []int32{0, 1, 2}}},
	}, {
		name: "more duplicated IDs than examples",
		adds: []ids{many[:12], many[12:]},
		dups: 12, rows: 12, slow: 3,
		examples: manyEx,
	}, {
		name: "a partial last batch",
		adds: []ids{{{1, 0}, {2, 0}, {3, 0}, {4, 0}, {4, 1}}},
		dups: 1, rows: 4, slow: 1,
		examples: []Duplicate{{ID: 4, Sources: []int32{0, 1}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := openOracle(t, Config{Batch: 4, MaxQueued: 8})
			var all []int64
			for _, a := range tt.adds {
				if err := o.Add(a); err != nil {
					t.Fatalf("Add: %v", err)
				}
				all = append(all, justIDs(a)...)
			}
			res := closeOracle(t, o)
			want := Result{
				Received: int64(len(all)), Rows: tt.rows, Duplicates: tt.dups,
				Examples: tt.examples, SlowBatches: tt.slow,
			}
			if got := res; !reflect.DeepEqual(got, want) {
				t.Errorf("Close =\n%+v, want\n%+v", got, want)
			}

			n, ex := Duplicates(all, MaxExamples)
			var wantEx []int64
			for _, d := range res.Examples {
				wantEx = append(wantEx, d.ID)
			}
			slices.Sort(wantEx)
			if n != res.Duplicates || !slices.Equal(ex, wantEx) {
				t.Errorf("Duplicates in memory = %d %v, the table says %d %v", n, ex, res.Duplicates, wantEx)
			}
		})
	}
}

// TestKeep leaves the table after Close with Keep, holding every ID with
// its source.
func TestKeep(t *testing.T) {
	o := openOracle(t, Config{Batch: 2, Keep: true})
	in := []Issued{{10, 3}, {11, 4}, {12, 3}}
	if err := o.Add(in); err != nil {
		t.Fatalf("Add: %v", err)
	}
	closeOracle(t, o)
	rows, err := testConn(t).Query(t.Context(), "SELECT id, source FROM "+o.cfg.Table+" ORDER BY id")
	if err != nil {
		t.Fatalf("read the kept table: %v", err)
	}
	var got []Issued
	for rows.Next() {
		var x Issued
		if err := rows.Scan(&x.ID, &x.Source); err != nil {
			t.Fatalf("scan: %v", err)
		}
		got = append(got, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read the kept table: %v", err)
	}
	if !slices.Equal(got, in) {
		t.Errorf("kept table holds %v, want %v", got, in)
	}
}

// TestDuplicatesInLargeBatches repeats a few IDs among 120,000 in batches
// of the default size (the last batch holds the last 20,004): the slow path
// redoes whole batches and still counts exactly.
func TestDuplicatesInLargeBatches(t *testing.T) {
	o := openOracle(t, Config{})
	in := seq(0, 1_000_000, 1, 120_000)
	in = slices.Insert(in, 70_000, Issued{ID: 1_069_990, Source: 3}) // twice inside batch 2
	in = append(in,
		Issued{ID: 1_000_010, Source: 1}, // once in batch 1, twice in batch 3
		Issued{ID: 1_119_999, Source: 2}, // twice inside batch 3
		Issued{ID: 1_000_010, Source: 4})
	for i := 0; i < len(in); i += 999 {
		if err := o.Add(in[i:min(i+999, len(in))]); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	res := closeOracle(t, o)
	want := Result{
		Received: int64(len(in)), Rows: 120_000, Duplicates: 4, SlowBatches: 2,
		Examples: []Duplicate{
			{ID: 1_069_990, Sources: []int32{0, 3}},
			{ID: 1_119_999, Sources: []int32{0, 2}}, // its first copy comes first in batch 3
			{ID: 1_000_010, Sources: []int32{0, 1, 4}},
		},
	}
	got := res
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Close =\n%+v, want\n%+v", got, want)
	}
	if n, _ := Duplicates(justIDs(in), 0); n != res.Duplicates {
		t.Errorf("Duplicates in memory = %d, the table says %d", n, res.Duplicates)
	}
}
