package server

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

func TestBadInput(t *testing.T) {
	const json = "application/json"
	f := newFixture(t, nil, nil)
	tests := []struct {
		name       string
		r          req
		wantStatus int
		wantCode   string
		wantAllow  string
	}{
		// Methods.
		{"GET ids", req{method: "GET", target: "/v1/ids"}, 405, CodeMethodNotAllowed, "POST"},
		{"PUT batch", req{method: "PUT", target: "/v1/ids:batch", body: `{"count":1}`, contentType: json}, 405, CodeMethodNotAllowed, "POST"},
		{"HEAD ids", req{method: "HEAD", target: "/v1/ids"}, 405, CodeMethodNotAllowed, "POST"},
		{"DELETE decode", req{method: "DELETE", target: "/v1/ids/" + example + "/decode"}, 405, CodeMethodNotAllowed, "GET"},
		{"POST healthz", req{method: "POST", target: "/healthz"}, 405, CodeMethodNotAllowed, "GET"},
		{"POST readyz", req{method: "POST", target: "/readyz"}, 405, CodeMethodNotAllowed, "GET"},
		{"POST metrics", req{method: "POST", target: "/metrics"}, 405, CodeMethodNotAllowed, "GET"},
		{"OPTIONS openapi", req{method: "OPTIONS", target: "/openapi.json"}, 405, CodeMethodNotAllowed, "GET"},

		// Counts in the body.
		{"batch without body", req{method: "POST", target: "/v1/ids:batch"}, 400, CodeInvalidCount, ""},
		{"empty object", req{method: "POST", target: "/v1/ids:batch", body: `{}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count 0", req{method: "POST", target: "/v1/ids:batch", body: `{"count":0}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count 1001", req{method: "POST", target: "/v1/ids:batch", body: `{"count":1001}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count -1", req{method: "POST", target: "/v1/ids:batch", body: `{"count":-1}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count -0", req{method: "POST", target: "/v1/ids:batch", body: `{"count":-0}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count huge", req{method: "POST", target: "/v1/ids:batch", body: `{"count":100000000000000000000000}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count string ten", req{method: "POST", target: "/v1/ids:batch", body: `{"count":"ten"}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count string 5", req{method: "POST", target: "/v1/ids:batch", body: `{"count":"5"}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count 1.5", req{method: "POST", target: "/v1/ids:batch", body: `{"count":1.5}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count 1.0", req{method: "POST", target: "/v1/ids:batch", body: `{"count":1.0}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count 1e3", req{method: "POST", target: "/v1/ids:batch", body: `{"count":1e3}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count null", req{method: "POST", target: "/v1/ids:batch", body: `{"count":null}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count true", req{method: "POST", target: "/v1/ids:batch", body: `{"count":true}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count array", req{method: "POST", target: "/v1/ids:batch", body: `{"count":[5]}`, contentType: json}, 400, CodeInvalidCount, ""},
		{"count missing value", req{method: "POST", target: "/v1/ids:batch", body: `{"count":}`, contentType: json}, 400, CodeInvalidCount, ""},

		// Malformed bodies.
		{"unknown field", req{method: "POST", target: "/v1/ids:batch", body: `{"count":5,"extra":1}`, contentType: json}, 400, CodeInvalidBody, ""},
		{"unknown field first", req{method: "POST", target: "/v1/ids:batch", body: `{"n":1,"count":5}`, contentType: json}, 400, CodeInvalidBody, ""},
		{"field name case", req{method: "POST", target: "/v1/ids:batch", body: `{"Count":5}`, contentType: json}, 400, CodeInvalidBody, ""},
		{"duplicate count", req{method: "POST", target: "/v1/ids:batch", body: `{"count":5,"count":6}`, contentType: json}, 400, CodeInvalidBody, ""},
		{"trailing garbage", req{method: "POST", target: "/v1/ids:batch", body: `{"count":5}x`, contentType: json}, 400, CodeInvalidBody, ""},
		{"two objects", req{method: "POST", target: "/v1/ids:batch", body: `{"count":5}{"count":5}`, contentType: json}, 400, CodeInvalidBody, ""},
		{"unterminated", req{method: "POST", target: "/v1/ids:batch", body: `{"count":5`, contentType: json}, 400, CodeInvalidBody, ""},
		{"trailing comma", req{method: "POST", target: "/v1/ids:batch", body: `{"count":5,}`, contentType: json}, 400, CodeInvalidBody, ""},
		{"leading zero", req{method: "POST", target: "/v1/ids:batch", body: `{"count":05}`, contentType: json}, 400, CodeInvalidBody, ""},
		{"array body", req{method: "POST", target: "/v1/ids:batch", body: `[5]`, contentType: json}, 400, CodeInvalidBody, ""},
		{"bare number", req{method: "POST", target: "/v1/ids:batch", body: `5`, contentType: json}, 400, CodeInvalidBody, ""},
		{"null body", req{method: "POST", target: "/v1/ids:batch", body: `null`, contentType: json}, 400, CodeInvalidCount, ""},
		{"not JSON", req{method: "POST", target: "/v1/ids:batch", body: `count=5`, contentType: json}, 400, CodeInvalidBody, ""},
		{"body on single", req{method: "POST", target: "/v1/ids", body: `{"count":5}`, contentType: json}, 400, CodeInvalidBody, ""},

		// POST /v1/ids takes {} as no body, and nothing else.
		{"single two objects", req{method: "POST", target: "/v1/ids", body: `{}{}`, contentType: json}, 400, CodeInvalidBody, ""},
		{"single trailing garbage", req{method: "POST", target: "/v1/ids", body: `{}x`, contentType: json}, 400, CodeInvalidBody, ""},
		{"single unknown field", req{method: "POST", target: "/v1/ids", body: `{"x":1}`, contentType: json}, 400, CodeInvalidBody, ""},
		{"single empty array", req{method: "POST", target: "/v1/ids", body: `[]`, contentType: json}, 400, CodeInvalidBody, ""},
		{"single empty string", req{method: "POST", target: "/v1/ids", body: `""`, contentType: json}, 400, CodeInvalidBody, ""},
		{"single unterminated", req{method: "POST", target: "/v1/ids", body: `{`, contentType: json}, 400, CodeInvalidBody, ""},
		{"single white space only", req{method: "POST", target: "/v1/ids", body: "  ", contentType: json}, 400, CodeInvalidBody, ""},
		{"single text/plain", req{method: "POST", target: "/v1/ids", body: `{}`, contentType: "text/plain"}, 415, CodeInvalidContentType, ""},
		{"single count and query", req{method: "POST", target: "/v1/ids?count=5", body: `{"count":5}`, contentType: json}, 400, CodeInvalidBody, ""},
		{"single bad query with {}", req{method: "POST", target: "/v1/ids?count=0", body: `{}`, contentType: json}, 400, CodeInvalidCount, ""},

		// Counts in the query.
		{"query count 0", req{method: "POST", target: "/v1/ids?count=0"}, 400, CodeInvalidCount, ""},
		{"query count 1001", req{method: "POST", target: "/v1/ids?count=1001"}, 400, CodeInvalidCount, ""},
		{"query count -1", req{method: "POST", target: "/v1/ids?count=-1"}, 400, CodeInvalidCount, ""},
		{"query count ten", req{method: "POST", target: "/v1/ids?count=ten"}, 400, CodeInvalidCount, ""},
		{"query count 1.5", req{method: "POST", target: "/v1/ids?count=1.5"}, 400, CodeInvalidCount, ""},
		{"query count null", req{method: "POST", target: "/v1/ids?count=null"}, 400, CodeInvalidCount, ""},
		{"query count empty", req{method: "POST", target: "/v1/ids?count="}, 400, CodeInvalidCount, ""},
		{"query count +5", req{method: "POST", target: "/v1/ids?count=%2B5"}, 400, CodeInvalidCount, ""},
		{"query count on batch", req{method: "POST", target: "/v1/ids:batch?count=0"}, 400, CodeInvalidCount, ""},
		{"query count twice", req{method: "POST", target: "/v1/ids?count=5&count=6"}, 400, CodeInvalidQuery, ""},
		{"query unknown parameter", req{method: "POST", target: "/v1/ids?n=5"}, 400, CodeInvalidQuery, ""},
		{"query unparsable", req{method: "POST", target: "/v1/ids?count=%zz"}, 400, CodeInvalidQuery, ""},

		// Both, content types, sizes.
		{"query and body", req{method: "POST", target: "/v1/ids:batch?count=5", body: `{"count":5}`, contentType: json}, 400, CodeConflictingCount, ""},
		{"query and body on batch", req{method: "POST", target: "/v1/ids:batch?count=5", body: `{"count":5}`, contentType: json}, 400, CodeConflictingCount, ""},
		{"text/plain", req{method: "POST", target: "/v1/ids:batch", body: `{"count":5}`, contentType: "text/plain"}, 415, CodeInvalidContentType, ""},
		{"form", req{method: "POST", target: "/v1/ids:batch", body: `{"count":5}`, contentType: "application/x-www-form-urlencoded"}, 415, CodeInvalidContentType, ""},
		{"unparsable content type", req{method: "POST", target: "/v1/ids:batch", body: `{"count":5}`, contentType: "application/json; ="}, 415, CodeInvalidContentType, ""},
		{"body too large", req{method: "POST", target: "/v1/ids:batch", body: `{"count":5` + strings.Repeat(" ", 5000) + `}`, contentType: json}, 413, CodeBodyTooLarge, ""},
		{"body too large on single", req{method: "POST", target: "/v1/ids", body: strings.Repeat("x", 4097)}, 413, CodeBodyTooLarge, ""},

		// IDs to decode.
		{"decode letters", req{target: "/v1/ids/abc/decode"}, 400, CodeInvalidID, ""},
		{"decode leading zero", req{target: "/v1/ids/0" + example + "/decode"}, 400, CodeInvalidID, ""},
		{"decode negative", req{target: "/v1/ids/-5/decode"}, 400, CodeInvalidID, ""},
		{"decode plus", req{target: "/v1/ids/+5/decode"}, 400, CodeInvalidID, ""},
		{"decode 2^63", req{target: "/v1/ids/9223372036854775808/decode"}, 400, CodeInvalidID, ""},
		{"decode 20 digits", req{target: "/v1/ids/99999999999999999999/decode"}, 400, CodeInvalidID, ""},
		{"decode space", req{target: "/v1/ids/12%2034/decode"}, 400, CodeInvalidID, ""},
		{"decode hex", req{target: "/v1/ids/0x1f/decode"}, 400, CodeInvalidID, ""},

		// Unknown paths.
		// "/" is the status page (TestStatusListeners: 404 on the main
		// listener when the admin listener is apart).
		{"index.html", req{target: "/index.html"}, 404, CodeNotFound, ""},
		{"status without asset", req{target: "/status/"}, 404, CodeNotFound, ""},
		{"status", req{target: "/status"}, 404, CodeNotFound, ""},
		{"v1", req{target: "/v1"}, 404, CodeNotFound, ""},
		{"ids slash", req{method: "POST", target: "/v1/ids/"}, 404, CodeNotFound, ""},
		{"id without decode", req{target: "/v1/ids/" + example}, 404, CodeNotFound, ""},
		{"decode slash", req{target: "/v1/ids/" + example + "/decode/"}, 404, CodeNotFound, ""},
		{"decode empty id", req{target: "/v1/ids//decode"}, 404, CodeNotFound, ""},
		{"decode two segments", req{target: "/v1/ids/1/2/decode"}, 404, CodeNotFound, ""},
		{"upper case", req{method: "POST", target: "/V1/IDS"}, 404, CodeNotFound, ""},
		{"healthz slash", req{target: "/healthz/"}, 404, CodeNotFound, ""},
		{"v2", req{method: "POST", target: "/v2/ids"}, 404, CodeNotFound, ""},
		{"batch colon variant", req{method: "POST", target: "/v1/ids:Batch"}, 404, CodeNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := f.do(tt.r)
			if got.status != tt.wantStatus {
				t.Fatalf("status %d, body %s; want %d", got.status, got.body, tt.wantStatus)
			}
			if tt.r.method == "HEAD" {
				return // no body
			}
			e := errorOf(t, got)
			if e.Code != tt.wantCode {
				t.Errorf("code %q (message %q), want %q", e.Code, e.Message, tt.wantCode)
			}
			if allow := got.header.Get("Allow"); allow != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", allow, tt.wantAllow)
			}
			if got.status == http.StatusServiceUnavailable || got.header.Get("Retry-After") != "" {
				t.Errorf("a client error carries Retry-After or 503")
			}
		})
	}
}

// TestGoodEdges checks inputs at the edge of what is accepted.
func TestGoodEdges(t *testing.T) {
	f := newFixture(t, nil, func(c *Config) { c.MaxBodyBytes = 64 })
	tests := []struct {
		name string
		r    req
	}{
		{"charset parameter", req{method: "POST", target: "/v1/ids:batch", body: `{"count":2}`, contentType: "application/json; charset=utf-8"}},
		{"body at the limit", req{method: "POST", target: "/v1/ids:batch", body: `{"count":2}` + strings.Repeat(" ", 64-len(`{"count":2}`)), contentType: "application/json"}},
		{"query leading zero", req{method: "POST", target: "/v1/ids?count=002"}},
		{"single {}", req{method: "POST", target: "/v1/ids", body: `{}`, contentType: "application/json"}},
		{"single {} with charset", req{method: "POST", target: "/v1/ids", body: `{}`, contentType: "application/json; charset=utf-8"}},
		{"single {} in white space", req{method: "POST", target: "/v1/ids", body: " {\t}\r\n", contentType: "application/json"}},
		{"decode a moment ahead", req{target: "/v1/ids/" + mustCompose(t, exampleTime.Add(500*time.Millisecond)) + "/decode"}},
		{"decode zero", req{target: "/v1/ids/0/decode"}},
		// Dated after the server's clock: decoded, with a warning
		// (TestDecodeFutureID), no longer refused with 422.
		{"decode max int64", req{target: "/v1/ids/9223372036854775807/decode"}},
		{"decode a minute ahead", req{target: "/v1/ids/" + mustCompose(t, exampleTime.Add(time.Minute)) + "/decode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.do(tt.r); got.status != http.StatusOK {
				t.Errorf("status %d, body %s; want 200", got.status, got.body)
			}
		})
	}
	r := f.do(req{method: "POST", target: "/v1/ids:batch", body: `{"count":2}` + strings.Repeat(" ", 65-len(`{"count":2}`)), contentType: "application/json"})
	if r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body one byte over MaxBodyBytes: status %d, want 413", r.status)
	}
}

func mustCompose(t *testing.T, at time.Time) string {
	t.Helper()
	id, err := snowfence.V1().ComposeAt(at, 0, 37, 0)
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

func TestCountRangeMessage(t *testing.T) {
	if want := "1 to " + strconv.Itoa(snowfence.MaxBatch); !strings.HasSuffix(countRange, want) {
		t.Errorf("countRange %q does not end in %q; update it with MaxBatch", countRange, want)
	}
}
