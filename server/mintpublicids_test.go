package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
)

// refuseSealers refuses every caller and counts the calls.
type refuseSealers struct{ calls int }

func (s *refuseSealers) MaySealPublicIDs(*http.Request) error {
	s.calls++
	return errors.New(`caller may not seal: add "seal_public_ids": true`)
}

// TestSealPermissionFirst: a caller that may not seal IDs of its choosing
// gets 403 before its body is read, whatever the body: it can test no
// guess of the ID behind a public ID (the oracle, docs/public-ids.md). The
// refusal says what grants the permission and what to use instead. With
// no PublicIDSealers, nobody may seal. Minting sealed IDs needs no such
// permission.
func TestSealPermissionFirst(t *testing.T) {
	s := &refuseSealers{}
	f := newFixture(t, nil, func(c *Config) { c.PublicIDSealers = s })
	for _, body := range []string{`{"type":"order","ids":["` + example + `"]}`, `{"type":"Order","ids":["1"]}`, `not json`} {
		r := f.post("/v1/public-ids", body)
		e := errorOf(t, r)
		if r.status != http.StatusForbidden || e.Code != CodeForbidden || strings.Contains(r.body, examplePID) {
			t.Errorf("seal %s: status %d, body %s; want 403 forbidden", body, r.status, r.body)
		}
		if !strings.Contains(e.Message, "seal_public_ids") || !strings.Contains(e.Message, "POST /v1/public-ids:mint") {
			t.Errorf("seal %s: message %q does not name seal_public_ids and POST /v1/public-ids:mint", body, e.Message)
		}
	}
	if s.calls != 3 {
		t.Errorf("MaySealPublicIDs called %d times, want 3", s.calls)
	}
	if r := f.post("/v1/public-ids:mint", `{"type":"order","count":2}`); r.status != http.StatusOK {
		t.Errorf("mint and seal by a caller that may not seal: status %d, body %s; want 200", r.status, r.body)
	}
	if s.calls != 3 {
		t.Errorf("POST /v1/public-ids:mint asked MaySealPublicIDs")
	}

	none := newFixture(t, nil, func(c *Config) { c.PublicIDSealers = nil })
	r := none.post("/v1/public-ids", `{"type":"order","ids":["1"]}`)
	if e := errorOf(t, r); r.status != http.StatusForbidden || e.Code != CodeForbidden || !strings.Contains(e.Message, "POST /v1/public-ids:mint") {
		t.Errorf("no PublicIDSealers: status %d, body %s; want 403 forbidden naming POST /v1/public-ids:mint", r.status, r.body)
	}
}

// mintedPublicIDs is the body of a 200 from POST /v1/public-ids:mint.
type mintedPublicIDs struct {
	IDs       []string `json:"ids"`
	PublicIDs []string `json:"public_ids"`
}

// TestMintPublicIDs: POST /v1/public-ids:mint answers N fresh IDs,
// strictly increasing and unique across requests, each with its sealed
// public ID, which opens (for a caller allowed to open) to exactly that ID
// and type, for every kind of type prefix: one letter, the longest, with
// '_'.
func TestMintPublicIDs(t *testing.T) {
	f := newFixture(t, nil, nil)
	ks := testPublicIDKeys(t)
	seen := map[string]bool{}
	var last snowfence.ID
	for _, prefix := range []string{"order", "a", "user_account", strings.Repeat("ab_", 20) + "abc"} {
		for _, n := range []int{1, 7, snowfence.MaxBatch} {
			r := f.post("/v1/public-ids:mint", fmt.Sprintf(`{"type":%q,"count":%d}`, prefix, n))
			if r.status != http.StatusOK || r.header.Get("Cache-Control") != "no-store" {
				t.Fatalf("%s ×%d: status %d, Cache-Control %q, body %.300s", prefix, n, r.status, r.header.Get("Cache-Control"), r.body)
			}
			var m mintedPublicIDs
			dec := json.NewDecoder(strings.NewReader(r.body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&m); err != nil || len(m.IDs) != n || len(m.PublicIDs) != n {
				t.Fatalf("%s ×%d: body %.300s (%v); want %d IDs and %d public IDs", prefix, n, r.body, err, n, n)
			}
			for i, s := range m.IDs {
				id, err := snowfence.ParseID(s)
				if err != nil || id <= last || seen[s] {
					t.Fatalf("%s ×%d: ids[%d] = %s (%v): not a fresh ID above %d", prefix, n, i, s, err, last)
				}
				seen[s], last = true, id
				want, err := ks.Seal(prefix, id)
				if err != nil || m.PublicIDs[i] != want {
					t.Fatalf("%s ×%d: public_ids[%d] = %s, want %s (%v)", prefix, n, i, m.PublicIDs[i], want, err)
				}
				if i > 3 && i < n-3 {
					continue // open a few of each batch over HTTP
				}
				o := f.do(req{target: "/v1/public-ids/" + m.PublicIDs[i]})
				if wantBody := fmt.Sprintf(`{"id":"%s","type":"%s","key_version":"2"}`, s, prefix); o.status != http.StatusOK || o.body != wantBody {
					t.Fatalf("open %s: status %d, body %s; want 200 %s", m.PublicIDs[i], o.status, o.body, wantBody)
				}
			}
		}
	}
	if got := f.gen.Stats().Issued; got != uint64(len(seen)) {
		t.Errorf("generator issued %d IDs, the answers held %d", got, len(seen))
	}
}

// TestMintPublicIDsQuota: each request asks the quota for its count, over
// quota is 429 with nothing minted, and a mint the generator refuses (503)
// gives the quota back and seals nothing.
func TestMintPublicIDsQuota(t *testing.T) {
	q := &fakeQuota{}
	f := newFixture(t, nil, func(c *Config) { c.Quota = q })
	for _, n := range []int{1, 999, 1000} {
		if r := f.post("/v1/public-ids:mint", fmt.Sprintf(`{"type":"order","count":%d}`, n)); r.status != http.StatusOK {
			t.Fatalf("count %d: %d %s", n, r.status, r.body)
		}
	}
	if r := f.post("/v1/public-ids:mint", `{"type":"order","count":0}`); r.status != http.StatusBadRequest {
		t.Fatalf("count 0: %d, want 400 before the quota", r.status)
	}
	if got, want := q.asked, []int{1, 999, 1000}; !slices.Equal(got, want) {
		t.Errorf("asked %v, want %v", got, want)
	}
	if got := q.done; !slices.Equal(got, []bool{true, true, true}) {
		t.Errorf("done %v, want [true true true]", got)
	}

	limited := newFixture(t, nil, func(c *Config) { c.Quota = &fakeQuota{err: &QuotaError{RetryAfter: 2e9, Message: "over quota"}} })
	r := limited.post("/v1/public-ids:mint", `{"type":"order","count":5}`)
	if e := errorOf(t, r); r.status != http.StatusTooManyRequests || e.Code != CodeRateLimited || r.header.Get("Retry-After") == "" {
		t.Errorf("over quota: status %d, Retry-After %q, body %s; want 429 rate_limited", r.status, r.header.Get("Retry-After"), r.body)
	}
	if got := limited.gen.Stats().Issued; got != 0 {
		t.Errorf("over quota: %d IDs issued, want 0", got)
	}

	fq := &fakeQuota{}
	fenced := newFixture(t, func(c *snowfence.Config) { c.Lease = nilLease{} }, func(c *Config) { c.Quota = fq })
	if r := fenced.post("/v1/public-ids:mint", `{"type":"order","count":5}`); r.status != http.StatusServiceUnavailable || strings.Contains(r.body, "order_") {
		t.Errorf("fenced: status %d, body %s; want 503", r.status, r.body)
	}
	if !slices.Equal(fq.done, []bool{false}) {
		t.Errorf("fenced: done %v, want [false] (the quota given back)", fq.done)
	}
}

// TestMintSealBodyRefused: the body is as strict as the seal body.
func TestMintSealBodyRefused(t *testing.T) {
	f := newFixture(t, nil, nil)
	for _, tt := range []struct{ name, body, code string }{
		{"no body", ``, CodeInvalidBody},
		{"not an object", `[]`, CodeInvalidBody},
		{"empty object", `{}`, CodeInvalidType},
		{"no count", `{"type":"order"}`, CodeInvalidCount},
		{"no type", `{"count":1}`, CodeInvalidType},
		{"count 0", `{"type":"order","count":0}`, CodeInvalidCount},
		{"count 1001", `{"type":"order","count":1001}`, CodeInvalidCount},
		{"count a string", `{"type":"order","count":"3"}`, CodeInvalidCount},
		{"count a fraction", `{"type":"order","count":1.5}`, CodeInvalidCount},
		{"empty type", `{"type":"","count":1}`, CodeInvalidType},
		{"upper-case type", `{"type":"Order","count":1}`, CodeInvalidType},
		{"type not a string", `{"type":1,"count":1}`, CodeInvalidType},
		{"Type", `{"Type":"order","count":1}`, CodeInvalidBody},
		{"type twice", `{"type":"order","type":"user","count":1}`, CodeInvalidBody},
		{"count twice", `{"type":"order","count":1,"count":1000}`, CodeInvalidBody},
		{"escaped name twice", `{"count":1,"type":"order","\u0074ype":"user"}`, CodeInvalidBody},
		{"ids", `{"type":"order","count":1,"ids":["1"]}`, CodeInvalidBody},
		{"trailing data", `{"type":"order","count":1} {}`, CodeInvalidBody},
		{"unterminated", `{"type":"order","count":1`, CodeInvalidBody},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := f.post("/v1/public-ids:mint", tt.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, body %.200s; want 400 %s", r.status, r.body, tt.code)
			}
			if e := errorOf(t, r); e.Code != tt.code {
				t.Errorf("code %s (%s), want %s", e.Code, e.Message, tt.code)
			}
		})
	}
	if r := f.post("/v1/public-ids:mint?count=3", `{"type":"order","count":1}`); r.status != http.StatusBadRequest || errorOf(t, r).Code != CodeInvalidQuery {
		t.Errorf("with a query: status %d, body %s; want 400 invalid_query", r.status, r.body)
	}
	// A body that does not say it is JSON is refused before it is read
	// (api/openapi.json: 415 on every operation with a body).
	if r := f.do(req{method: "POST", target: "/v1/public-ids:mint", body: `{"type":"order","count":1}`, contentType: "text/plain"}); r.status != http.StatusUnsupportedMediaType || errorOf(t, r).Code != CodeInvalidContentType {
		t.Errorf("text/plain: status %d, body %s; want 415 %s", r.status, r.body, CodeInvalidContentType)
	}
	if r := f.post("/v1/public-ids:mint", `{"\u0074ype":"\u006frder","\u0063ount":2}`); r.status != http.StatusOK {
		t.Errorf("escaped body: status %d, body %s; want 200", r.status, r.body)
	}
	if got := f.gen.Stats().Issued; got != 2 {
		t.Errorf("%d IDs issued, want 2 (the refused requests minted none)", got)
	}
}
