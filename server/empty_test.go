package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/snowfence/snowfence"
)

// TestEmptyObjectIsNoBody checks that POST /v1/ids with {} answers exactly
// as without a body: one ID in the single-ID shape, or with ?count=N a
// batch of N.
func TestEmptyObjectIsNoBody(t *testing.T) {
	f := newFixture(t, nil, nil)
	plain := f.post("/v1/ids", "")
	empty := f.post("/v1/ids", `{}`)
	for _, r := range []response{plain, empty} {
		var one struct {
			ID    snowfence.ID `json:"id"`
			IDNum int64        `json:"id_num"`
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(r.body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&one); r.status != http.StatusOK || err != nil || int64(one.ID) != one.IDNum {
			t.Fatalf("status %d, body %s (%v); want one ID", r.status, r.body, err)
		}
	}
	if plain.body == empty.body {
		t.Errorf("two requests got the same ID: %s", plain.body)
	}
	if ids := batchIDs(t, f.post("/v1/ids?count=3", `{}`)); len(ids) != 3 {
		t.Errorf("?count=3 with {}: %d IDs, want 3", len(ids))
	}
}

// TestEmptyObject lists what emptyObject takes: {} and white space around
// and inside it, nothing else.
func TestEmptyObject(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{}`, true}, {` { } `, true}, {"\t{\n}\r\n", true},
		{``, false}, {` `, false}, {`{}{}`, false}, {`{},`, false}, {`{}x`, false}, {`[]`, false},
		{`null`, false}, {`{"count":1}`, false}, {`{"x":1}`, false}, {`{`, false}, {`}`, false},
		{"{}\x00", false}, {`""`, false}, {`0`, false},
	} {
		if got := emptyObject([]byte(tc.body)); got != tc.want {
			t.Errorf("emptyObject(%q) = %v, want %v", tc.body, got, tc.want)
		}
	}
}
