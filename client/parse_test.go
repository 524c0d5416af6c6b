package client

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
)

func TestParseBatch(t *testing.T) {
	good := []struct {
		name string
		body string
		n    int
		want []int64
	}{
		{"server's form", `{"ids":["1","2","97301141913751557"]}`, 3, []int64{1, 2, 97301141913751557}},
		{"white space", " {\n \"ids\" : [ \"5\" ,\t\"6\" ] } \r\n", 2, []int64{5, 6}},
		{"16 and 17 digits", `{"ids":["1234567890123456","12345678901234567"]}`, 2, []int64{1234567890123456, 12345678901234567}},
		{"largest ID", `{"ids":["9223372036854775806","9223372036854775807"]}`, 2, []int64{9223372036854775806, 9223372036854775807}},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			got, bad := parseBatch([]int64{42}, []byte(tc.body), tc.n)
			if bad != "" || !slices.Equal(got, append([]int64{42}, tc.want...)) {
				t.Errorf("parseBatch(%q, %d) = %v, %q; want [42 %v], no error", tc.body, tc.n, got, bad, tc.want)
			}
		})
	}
	bad := []struct {
		name string
		body string
		n    int
	}{
		{"empty", ``, 1},
		{"not an object", `["1"]`, 1},
		{"other member", `{"id":"1"}`, 1},
		{"extra member", `{"ids":["1"],"more":1}`, 1},
		{"repeated member", `{"ids":["1"],"ids":["2"]}`, 1},
		{"escaped name", `{"\u0069ds":["1"]}`, 1},
		{"name case", `{"IDS":["1"]}`, 1},
		{"not an array", `{"ids":"1"}`, 1},
		{"empty array", `{"ids":[]}`, 1},
		{"too few", `{"ids":["1","2"]}`, 3},
		{"too many", `{"ids":["1","2","3"]}`, 2},
		{"number, not string", `{"ids":[1]}`, 1},
		{"zero", `{"ids":["0"]}`, 1},
		{"negative", `{"ids":["-1"]}`, 1},
		{"leading zero", `{"ids":["01"]}`, 1},
		{"plus sign", `{"ids":["+1"]}`, 1},
		{"space inside", `{"ids":[" 1"]}`, 1},
		{"fraction", `{"ids":["1.0"]}`, 1},
		{"escape in ID", `{"ids":["\u0031"]}`, 1},
		{"over 2^63-1", `{"ids":["9223372036854775808"]}`, 1},
		{"letter in a long ID", `{"ids":["1234567812345a78901"]}`, 1},
		{"colon in a long ID", `{"ids":["12345678:2345678901"]}`, 1},
		{"20 digits", `{"ids":["10000000000000000000"]}`, 1},
		{"equal", `{"ids":["5","5"]}`, 2},
		{"decreasing", `{"ids":["6","5"]}`, 2},
		{"trailing comma", `{"ids":["1",]}`, 1},
		{"unterminated", `{"ids":["1"]`, 1},
		{"cut short", `{"ids":["1","2`, 2},
		{"trailing data", `{"ids":["1"]}x`, 1},
		{"two objects", `{"ids":["1"]}{"ids":["2"]}`, 1},
		{"null", `null`, 1},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			got, why := parseBatch([]int64{42}, []byte(tc.body), tc.n)
			if why == "" || !slices.Equal(got, []int64{42}) {
				t.Errorf("parseBatch(%q, %d) = %v, %q; want [42] and a reason", tc.body, tc.n, got, why)
			}
		})
	}
}

// FuzzParseBatch holds the parser to the API: what it accepts is a batch
// encoding/json reads the same IDs from, exactly n of them, positive and
// strictly increasing; and it accepts every batch the server writes.
func FuzzParseBatch(f *testing.F) {
	f.Add([]byte(`{"ids":["1","2","3"]}`), 3)
	f.Add([]byte(`{"ids":["97301141913751557"]}`), 1)
	f.Add([]byte(` { "ids" : [ "1" , "9223372036854775807" ] } `), 2)
	f.Add([]byte(`{"ids":["5","5"]}`), 2)
	f.Add([]byte(`{"ids":["01"]}`), 1)
	f.Add([]byte(`{"ids":["1234567812345a78901","9223372036854775807"]}`), 2)
	f.Add([]byte(`{"ids":["12345678123456789"]}`), 1)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		if n < 1 || n > snowfence.MaxBatch {
			n = 1 + (n%snowfence.MaxBatch+snowfence.MaxBatch)%snowfence.MaxBatch
		}
		got, bad := parseBatch(nil, body, n)
		if bad != "" {
			if len(got) != 0 {
				t.Fatalf("refused %q (%s) but returned %v", body, bad, got)
			}
			return
		}
		var v struct {
			IDs []snowfence.ID `json:"ids"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || dec.More() {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
		}
		if len(got) != n || len(v.IDs) != n {
			t.Fatalf("accepted %q with %d IDs (json: %d), want %d", body, len(got), len(v.IDs), n)
		}
		for i, id := range got {
			if int64(v.IDs[i]) != id || id <= 0 || i > 0 && id <= got[i-1] {
				t.Fatalf("accepted %q: IDs %v, json reads %v; want the same, positive and increasing", body, got, v.IDs)
			}
		}
		again, bad := parseBatch(nil, appendBatchBody(nil, got), n)
		if bad != "" || !slices.Equal(again, got) {
			t.Fatalf("the server's form of %v does not parse back: %v, %s", got, again, bad)
		}
	})
}

// batchBody is a batch of 1,000 IDs as the server writes it.
func batchBody() []byte {
	ids := make([]int64, snowfence.MaxBatch)
	for i := range ids {
		ids[i] = 97301141913751557 + int64(i)
	}
	return appendBatchBody(nil, ids)
}

// BenchmarkParseBatch is the client's parse of a batch of 1,000 (ns/op is
// per batch); BenchmarkParseBatchJSON decodes the same body with
// encoding/json into []snowfence.ID, for comparison.
func BenchmarkParseBatch(b *testing.B) {
	body := batchBody()
	dst := make([]int64, 0, snowfence.MaxBatch)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, bad := parseBatch(dst[:0], body, snowfence.MaxBatch); bad != "" {
			b.Fatal(bad)
		}
	}
}

func BenchmarkParseBatchJSON(b *testing.B) {
	body := batchBody()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var v struct {
			IDs []snowfence.ID `json:"ids"`
		}
		if err := json.Unmarshal(body, &v); err != nil || len(v.IDs) != snowfence.MaxBatch {
			b.Fatal(err)
		}
	}
}

func TestParseBatchServerForm(t *testing.T) {
	body := batchBody()
	got, bad := parseBatch(nil, body, snowfence.MaxBatch)
	if bad != "" || len(got) != snowfence.MaxBatch {
		t.Fatalf("the server's batch of 1,000 does not parse: %d IDs, %s", len(got), bad)
	}
	if !strings.HasPrefix(string(body), `{"ids":["97301141913751557",`) {
		t.Fatalf("body starts %.40s", body)
	}
}
