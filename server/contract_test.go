package server

import (
	"encoding/json"
	"net/http"
	"testing"
)

// The requests a client generated from api/openapi.json sends (oapi-codegen,
// openapi-typescript with openapi-fetch), and what the description says of
// them, agree with what the server does (issue 28, items 8–10). The
// generated clients themselves run against a live server in cmd/snowfence
// (TestE2EGeneratedClients, TestE2EPrismProxy).

// TestNoBodyFields: null and {} are a body without fields. oapi-codegen's
// natural mintIDs/mintUUIDs call sends null (a nil map), and its natural
// mintBatch call with the count in the query sends {} (the count field
// unset); each is the same request as no body. A count given in the body is
// still a count given: 0 is out of range, and beside ?count=N it
// conflicts.
func TestNoBodyFields(t *testing.T) {
	f := newFixture(t, nil, nil)
	for _, tc := range []struct {
		target, body string
		want         string // "one", "uuid", "batch", "uuids", or an error code
		n            int
	}{
		{"/v1/ids", "null", "one", 1},
		{"/v1/ids", " null\n", "one", 1},
		{"/v1/ids?count=3", "null", "batch", 3},
		{"/v1/uuids", "null", "uuid", 1},
		{"/v1/uuids?count=2", "null", "uuids", 2},
		{"/v1/ids:batch?count=3", "{}", "batch", 3},
		{"/v1/ids:batch?count=3", "null", "batch", 3},
		{"/v1/ids:batch", "null", CodeInvalidCount, 0},
		{"/v1/ids:batch", "{}", CodeInvalidCount, 0},
		{"/v1/ids:batch?count=3", `{"count":0}`, CodeInvalidCount, 0},
		{"/v1/ids:batch?count=3", `{"count":3}`, CodeConflictingCount, 0},
		{"/v1/ids", `{"count":3}`, CodeInvalidBody, 0},
		{"/v1/ids", "nul", CodeInvalidBody, 0},
		{"/v1/ids", "null null", CodeInvalidBody, 0},
		{"/v1/uuids", "[]", CodeInvalidBody, 0},
	} {
		r := f.post(tc.target, tc.body)
		switch tc.want {
		case "one", "uuid", "batch", "uuids":
			if r.status != http.StatusOK {
				t.Errorf("POST %s with %q: status %d, body %s; want 200", tc.target, tc.body, r.status, r.body)
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(r.body), &m); err != nil {
				t.Fatal(err)
			}
			key := map[string]string{"one": "id", "uuid": "uuid", "batch": "ids", "uuids": "uuids"}[tc.want]
			if _, ok := m[key]; !ok {
				t.Errorf("POST %s with %q: %s; want %q", tc.target, tc.body, r.body, key)
			}
			if tc.n > 1 {
				var list []string
				json.Unmarshal(m[key], &list)
				if len(list) != tc.n {
					t.Errorf("POST %s with %q: %d values, want %d", tc.target, tc.body, len(list), tc.n)
				}
			}
		default:
			if r.status != http.StatusBadRequest {
				t.Errorf("POST %s with %q: status %d, body %s; want 400 %s", tc.target, tc.body, r.status, r.body, tc.want)
				continue
			}
			if e := errorOf(t, r); e.Code != tc.want {
				t.Errorf("POST %s with %q: code %q (%s), want %q", tc.target, tc.body, e.Code, e.Message, tc.want)
			}
		}
	}
}

// TestContentTypeRequired: a request with a body must say it is JSON, as
// api/openapi.json (which lists only application/json) says: without a
// Content-Type, or with another, it is a 415 invalid_content_type, and
// nothing is issued. A request without a body needs none.
func TestContentTypeRequired(t *testing.T) {
	f := newFixture(t, nil, nil)
	for _, tc := range []struct{ target, body, ct string }{
		{"/v1/ids", "{}", ""},
		{"/v1/ids", "null", ""},
		{"/v1/ids", "{}", "text/plain"},
		{"/v1/ids?count=2", "{}", ""},
		{"/v1/ids:batch", `{"count":2}`, ""},
		{"/v1/ids:batch", `{"count":2}`, "application/x-www-form-urlencoded"},
		{"/v1/ids:batch?count=2", "{}", ""},
		{"/v1/uuids", "{}", ""},
		{"/v1/uuids", "{}", "text/plain"},
		{"/v1/public-ids", `{"type":"order","ids":["1"]}`, ""},
		{"/v1/public-ids", `{"type":"order","ids":["1"]}`, "text/plain"},
		{"/v1/public-ids:mint", `{"type":"order","count":1}`, ""},
		{"/v1/public-ids:mint", `{"type":"order","count":1}`, "text/plain"},
	} {
		r := f.do(req{method: "POST", target: tc.target, body: tc.body, contentType: tc.ct})
		if r.status != http.StatusUnsupportedMediaType {
			t.Errorf("POST %s %q with Content-Type %q: status %d, body %s; want 415", tc.target, tc.body, tc.ct, r.status, r.body)
			continue
		}
		if e := errorOf(t, r); e.Code != CodeInvalidContentType {
			t.Errorf("POST %s with Content-Type %q: code %q, want %q", tc.target, tc.ct, e.Code, CodeInvalidContentType)
		}
	}
	for _, target := range []string{"/v1/ids", "/v1/ids?count=2", "/v1/ids:batch?count=2", "/v1/uuids"} {
		if r := f.do(req{method: "POST", target: target}); r.status != http.StatusOK {
			t.Errorf("POST %s without a body or Content-Type: status %d, body %s; want 200", target, r.status, r.body)
		}
	}
}

// TestHeadNotServed: every operation takes the one method api/openapi.json
// gives it, so HEAD on a GET route is a 405 whose Allow names GET alone.
func TestHeadNotServed(t *testing.T) {
	f := newFixture(t, nil, nil)
	for _, rt := range routes() {
		if rt.method != http.MethodGet {
			continue
		}
		r := f.do(req{method: http.MethodHead, target: concrete(rt.pattern)})
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET" {
			t.Errorf("HEAD %s: status %d, Allow %q; want 405 with Allow: GET", rt.pattern, r.status, r.header.Get("Allow"))
		}
	}
}
