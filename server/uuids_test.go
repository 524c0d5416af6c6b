package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
)

// exampleUUID is the UUIDv8 form of example under the default schedule.
const exampleUUID = "01a0dd96-2600-802b-8d76-fc0012802b88"

func TestExampleUUID(t *testing.T) {
	u, err := snowfence.DefaultSchedule().ToUUID(snowfence.MustParseID(example))
	if err != nil || u.String() != exampleUUID {
		t.Fatalf("ToUUID(%s) = %s, %v; the tests say %s", example, u, err, exampleUUID)
	}
}

// POST /v1/uuids gives one UUIDv7 at the server's clock, or count of them
// increasing, also while the generator is fenced, never cached.
func TestMintUUIDs(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		var gcfg func(*snowfence.Config)
		if fenced {
			gcfg = func(c *snowfence.Config) { c.Lease = nilLease{} }
		}
		f := newFixture(t, gcfg, nil)
		r := f.post("/v1/uuids", "")
		if r.status != http.StatusOK || r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("fenced %v: status %d, Cache-Control %q, body %s", fenced, r.status, r.header.Get("Cache-Control"), r.body)
		}
		var one struct{ UUID snowfence.UUID }
		dec := json.NewDecoder(strings.NewReader(r.body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&one); err != nil {
			t.Fatalf("body %s: %v", r.body, err)
		}
		if tm, ok := one.UUID.Time(); one.UUID.Version() != 7 || !ok || tm.UnixMilli() != f.clock.Now().WallMs {
			t.Fatalf("UUID %s: version %d at %v", one.UUID, one.UUID.Version(), tm)
		}
		r = f.post("/v1/uuids?count=1000", "")
		var many struct{ UUIDs []snowfence.UUID }
		dec = json.NewDecoder(strings.NewReader(r.body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&many); err != nil || len(many.UUIDs) != 1000 {
			t.Fatalf("count=1000: %d UUIDs, %v", len(many.UUIDs), err)
		}
		prev := one.UUID
		for i, u := range many.UUIDs {
			if prev.Compare(u) >= 0 {
				t.Fatalf("UUID %d %s is not above %s", i, u, prev)
			}
			prev = u
		}
	}
}

func TestMintUUIDsRefusals(t *testing.T) {
	f := newFixture(t, nil, nil)
	for _, tc := range []struct {
		target, body, code string
		status             int
	}{
		{"/v1/uuids?count=0", "", CodeInvalidCount, 400},
		{"/v1/uuids?count=1001", "", CodeInvalidCount, 400},
		{"/v1/uuids?count=x", "", CodeInvalidCount, 400},
		{"/v1/uuids?n=2", "", CodeInvalidQuery, 400},
		{"/v1/uuids", `{"count":2}`, CodeInvalidBody, 400},
		{"/v1/uuids", `[]`, CodeInvalidBody, 400},
	} {
		r := f.post(tc.target, tc.body)
		if e := errorOf(t, r); r.status != tc.status || e.Code != tc.code {
			t.Errorf("POST %s %s: %d %s, want %d %s", tc.target, tc.body, r.status, e.Code, tc.status, tc.code)
		}
	}
	r := f.do(req{method: "POST", target: "/v1/uuids", body: "{}", contentType: "text/plain"})
	if e := errorOf(t, r); r.status != http.StatusUnsupportedMediaType || e.Code != CodeInvalidContentType {
		t.Errorf("{} as text/plain: %d %s", r.status, e.Code)
	}
}

// The quota is asked for count units.
func TestMintUUIDsQuota(t *testing.T) {
	q := &fakeQuota{}
	f := newFixture(t, nil, func(c *Config) { c.Quota = q })
	if r := f.post("/v1/uuids?count=7", ""); r.status != 200 {
		t.Fatalf("status %d body %s", r.status, r.body)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.asked) != 1 || q.asked[0] != 7 || len(q.done) != 1 || !q.done[0] {
		t.Errorf("quota asked %v, done %v; want [7], [true]", q.asked, q.done)
	}
}

// Decode takes the UUIDv8 form, either case, and says so; a UUID that is
// not one of ours is invalid_id.
func TestDecodeUUIDForm(t *testing.T) {
	f := newFixture(t, nil, nil)
	for _, text := range []string{exampleUUID, strings.ToUpper(exampleUUID)} {
		r := f.do(req{target: "/v1/ids/" + text + "/decode"})
		var d map[string]any
		if err := json.Unmarshal([]byte(r.body), &d); err != nil || r.status != 200 {
			t.Fatalf("%s: %d %s", text, r.status, r.body)
		}
		if d["id"] != example || d["uuid"] != exampleUUID || d["machine"] != 37.0 {
			t.Errorf("%s: %s", text, r.body)
		}
	}
	r := f.do(req{target: "/v1/ids/" + example + "/decode"})
	if strings.Contains(r.body, "uuid") {
		t.Errorf("decimal decode mentions a uuid: %s", r.body)
	}
	for _, text := range []string{
		"0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f",  // a UUIDv7
		"01a0dd96-2600-802b-8d76-fc0012802b89",  // our form, check broken
		"{01a0dd96-2600-802b-8d76-fc0012802b88", // 36 characters, not a UUID
	} {
		r := f.do(req{target: "/v1/ids/" + text + "/decode"})
		if e := errorOf(t, r); r.status != 400 || e.Code != CodeInvalidID {
			t.Errorf("%s: %d %s", text, r.status, r.body)
		}
	}
}
