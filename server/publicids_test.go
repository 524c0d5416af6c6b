package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/publicid"
)

func TestPublicIDsRoundTrip(t *testing.T) {
	f := newFixture(t, nil, nil)
	ids := make([]string, snowfence.MaxBatch)
	for i := range ids {
		ids[i] = fmt.Sprint(int64(snowfence.MustParseID(example)) + int64(i))
	}
	body, _ := json.Marshal(map[string]any{"type": "user_account", "ids": ids})
	r := f.post("/v1/public-ids", string(body))
	if r.status != http.StatusOK {
		t.Fatalf("seal: status %d, body %.300s", r.status, r.body)
	}
	var sealed struct {
		PublicIDs []string `json:"public_ids"`
	}
	if err := json.Unmarshal([]byte(r.body), &sealed); err != nil || len(sealed.PublicIDs) != len(ids) {
		t.Fatalf("seal: body %.300s (%v); want %d public IDs", r.body, err, len(ids))
	}
	for i, pid := range sealed.PublicIDs[:50] {
		o := f.do(req{target: "/v1/public-ids/" + pid})
		want := fmt.Sprintf(`{"id":"%s","type":"user_account","key_version":"2"}`, ids[i])
		if o.status != http.StatusOK || o.body != want || o.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("open %s: status %d, body %s, Cache-Control %q; want 200 %s, no-store", pid, o.status, o.body, o.header.Get("Cache-Control"), want)
		}
	}
	if r := f.post("/v1/public-ids", `{"type":"order","ids":["`+example+`"]}`); r.body != `{"public_ids":["`+examplePID+`"]}` {
		t.Errorf("seal example: %s, want %s", r.body, examplePID)
	}
}

func TestSealBodyRefused(t *testing.T) {
	f := newFixture(t, nil, nil)
	tooMany := `{"type":"order","ids":[` + strings.Repeat(`"1",`, snowfence.MaxBatch) + `"1"]}`
	tests := []struct {
		name, body, code string
	}{
		{"no body", ``, CodeInvalidBody},
		{"not an object", `[]`, CodeInvalidBody},
		{"empty object", `{}`, CodeInvalidType},
		{"no ids", `{"type":"order"}`, CodeInvalidCount},
		{"no type", `{"ids":["1"]}`, CodeInvalidType},
		{"empty ids", `{"type":"order","ids":[]}`, CodeInvalidCount},
		{"1001 ids", tooMany, CodeInvalidCount},
		{"numeric id", `{"type":"order","ids":[1]}`, CodeInvalidID},
		{"bad id", `{"type":"order","ids":["01"]}`, CodeInvalidID},
		{"negative id", `{"type":"order","ids":["-1"]}`, CodeInvalidID},
		{"id too large", `{"type":"order","ids":["9223372036854775808"]}`, CodeInvalidID},
		{"empty type", `{"type":"","ids":["1"]}`, CodeInvalidType},
		{"upper-case type", `{"type":"Order","ids":["1"]}`, CodeInvalidType},
		{"type not a string", `{"type":1,"ids":["1"]}`, CodeInvalidType},
		{"type with trailing _", `{"type":"order_","ids":["1"]}`, CodeInvalidType},
		{"Type", `{"Type":"order","ids":["1"]}`, CodeInvalidBody},
		{"type twice", `{"type":"order","type":"user","ids":["1"]}`, CodeInvalidBody},
		{"ids twice", `{"type":"order","ids":["1"],"ids":["2"]}`, CodeInvalidBody},
		{"escaped name twice", `{"type":"order","\u0074ype":"user","ids":["1"]}`, CodeInvalidBody},
		{"unknown field", `{"type":"order","ids":["1"],"mint":3}`, CodeInvalidBody},
		{"trailing data", `{"type":"order","ids":["1"]} {}`, CodeInvalidBody},
		{"ids not an array", `{"type":"order","ids":"1"}`, CodeInvalidBody},
		{"unterminated", `{"type":"order","ids":["1"`, CodeInvalidBody},
		{"trailing comma", `{"type":"order","ids":["1",]}`, CodeInvalidID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.post("/v1/public-ids", tt.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, body %.200s; want 400 %s", r.status, r.body, tt.code)
			}
			if e := errorOf(t, r); e.Code != tt.code {
				t.Errorf("code %s (%s), want %s", e.Code, e.Message, tt.code)
			}
		})
	}
	// Escaped names and values are read for what they say.
	if r := f.post("/v1/public-ids", `{"\u0074ype":"\u006frder","ids":["\u0039`+example[1:]+`"]}`); r.status != http.StatusOK || !strings.Contains(r.body, examplePID) {
		t.Errorf("escaped body: status %d, body %s; want %s", r.status, r.body, examplePID)
	}
	if r := f.do(req{method: "POST", target: "/v1/public-ids", body: `{"type":"order","ids":["1"]}`, contentType: "text/plain"}); r.status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: status %d, want 415", r.status)
	}
	if r := f.post("/v1/public-ids?count=3", `{"type":"order","ids":["1"]}`); r.status != http.StatusBadRequest || errorOf(t, r).Code != CodeInvalidQuery {
		t.Errorf("with a query: status %d, body %s; want 400 invalid_query", r.status, r.body)
	}
}

// TestOpenPublicIDRefusals: forged, unknown-version and retired-key IDs
// get the same answer; a decrypt-only key's IDs open.
func TestOpenPublicIDRefusals(t *testing.T) {
	f := newFixture(t, nil, nil)
	suffix := examplePID[len("order_2"):]
	var bodies []string
	for _, pid := range []string{
		"order_2" + "0000000000000000000000000a", // forged
		"order_0" + suffix,                       // retired
		"order_9" + suffix,                       // unknown
		"user_2" + suffix,                        // another type
	} {
		r := f.do(req{target: "/v1/public-ids/" + pid})
		e := errorOf(t, r)
		if r.status != http.StatusNotFound || e.Code != CodePublicIDNotFound {
			t.Errorf("%s: status %d code %s; want 404 %s", pid, r.status, e.Code, CodePublicIDNotFound)
		}
		bodies = append(bodies, strings.Replace(r.body, pid, "PID", 1))
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Errorf("refusals differ: %s vs %s", b, bodies[0])
		}
	}
	// Sealed under version 1 when it was primary; it is decrypt-only now.
	was, err := publicid.ParseKeyset([]byte(`{"keys": {"1": {"status": "primary", "key": "000102030405060708090a0b0c0d0e0f"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := was.Seal("order", snowfence.MustParseID(example))
	if r := f.do(req{target: "/v1/public-ids/" + pid}); r.status != http.StatusOK || r.body != `{"id":"`+example+`","type":"order","key_version":"1"}` {
		t.Errorf("decrypt-only %s: status %d, body %s", pid, r.status, r.body)
	}
	for _, pid := range []string{"order_x", "order_" + suffix, "ORDER_2" + suffix, "order_2" + strings.ToUpper(suffix)} {
		if r := f.do(req{target: "/v1/public-ids/" + pid}); r.status != http.StatusBadRequest || errorOf(t, r).Code != CodeInvalidPublicID {
			t.Errorf("%s: status %d, body %s; want 400 invalid_public_id", pid, r.status, r.body)
		}
	}
}

// refuseOpeners refuses every caller and counts the calls.
type refuseOpeners struct{ calls int }

func (o *refuseOpeners) MayOpenPublicIDs(*http.Request) error {
	o.calls++
	return errors.New("caller may not open public IDs")
}

// TestOpenPermissionFirst: a caller that may not open is refused before
// the ID is read, whatever the ID: it learns nothing of it.
func TestOpenPermissionFirst(t *testing.T) {
	o := &refuseOpeners{}
	f := newFixture(t, nil, func(c *Config) { c.PublicIDOpeners = o })
	for _, pid := range []string{examplePID, "order_x", "order_20000000000000000000000000a"} {
		r := f.do(req{target: "/v1/public-ids/" + pid})
		if e := errorOf(t, r); r.status != http.StatusForbidden || e.Code != CodeForbidden || strings.Contains(r.body, example) {
			t.Errorf("%s: status %d, body %s; want 403 forbidden", pid, r.status, r.body)
		}
	}
	if o.calls != 3 {
		t.Errorf("MayOpenPublicIDs called %d times, want 3", o.calls)
	}
	// Sealing needs no open permission (this fixture has no quota).
	if r := f.post("/v1/public-ids", `{"type":"order","ids":["1"]}`); r.status != http.StatusOK {
		t.Errorf("seal: status %d, body %s", r.status, r.body)
	}
}
