package offsetclock_test

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/offsetclock"
)

// serve sends one request to c's handler.
func serve(c *offsetclock.Clock, method, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/test/clock-offset", strings.NewReader(body))
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, req)
	return rec
}

func TestHandler(t *testing.T) {
	const start = -7 * time.Millisecond
	maxMs := offsetclock.MaxOffset.Milliseconds()
	for _, tc := range []struct {
		name, method, body string
		status             int
		want               time.Duration // the offset afterwards
		code               string        // the error code, for non-200s
	}{
		{"get", "GET", "", 200, start, ""},
		{"get ignores a body", "GET", `{"offset_ms":5}`, 200, start, ""},
		{"set", "POST", `{"offset_ms":-280}`, 200, -280 * time.Millisecond, ""},
		{"set zero", "POST", `{"offset_ms":0}`, 200, 0, ""},
		{"set largest", "POST", `{"offset_ms":` + itoa(maxMs) + `}`, 200, offsetclock.MaxOffset, ""},
		{"step back", "POST", `{"step_ms":-280}`, 200, start - 280*time.Millisecond, ""},
		{"step forward 10 min", "POST", `{"step_ms":600000}`, 200, start + 10*time.Minute, ""},
		{"step with spaces", "POST", " \n{ \"step_ms\" : 3 }\n ", 200, start + 3*time.Millisecond, ""},
		{"neither", "POST", `{}`, 400, start, "bad_request"},
		{"both", "POST", `{"offset_ms":1,"step_ms":1}`, 400, start, "bad_request"},
		{"null", "POST", `{"step_ms":null}`, 400, start, "bad_request"},
		{"unknown field", "POST", `{"step_ms":1,"jump_ms":2}`, 400, start, "bad_request"},
		{"fraction", "POST", `{"step_ms":1.5}`, 400, start, "bad_request"},
		{"exponent", "POST", `{"step_ms":1e3}`, 400, start, "bad_request"},
		{"string", "POST", `{"step_ms":"5"}`, 400, start, "bad_request"},
		{"beyond int64", "POST", `{"offset_ms":9223372036854775808}`, 400, start, "bad_request"},
		{"beyond MaxOffset", "POST", `{"offset_ms":` + itoa(maxMs+1) + `}`, 400, start, "bad_request"},
		{"step beyond MaxOffset", "POST", `{"step_ms":` + itoa(-maxMs-1) + `}`, 400, start, "bad_request"},
		{"array", "POST", `[1]`, 400, start, "bad_request"},
		{"empty", "POST", ``, 400, start, "bad_request"},
		{"truncated", "POST", `{"step_ms":`, 400, start, "bad_request"},
		{"trailing data", "POST", `{"step_ms":1} x`, 400, start, "bad_request"},
		{"second object", "POST", `{"step_ms":1}{"step_ms":1}`, 400, start, "bad_request"},
		{"over 1 KiB", "POST", `{"step_ms":1` + strings.Repeat(" ", 1024) + `}`, 400, start, "bad_request"},
		{"put", "PUT", `{"step_ms":1}`, 405, start, "method_not_allowed"},
		{"delete", "DELETE", "", 405, start, "method_not_allowed"},
		{"head", "HEAD", "", 405, start, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := newClock()
			c.SetOffset(start)
			rec := serve(c, tc.method, tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tc.status)
			}
			if got := c.Offset(); got != tc.want {
				t.Errorf("offset %v afterwards, want %v", got, tc.want)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			switch {
			case tc.status == 200:
				var got map[string]int64
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got) != 1 || got["offset_ms"] != tc.want.Milliseconds() {
					t.Errorf("body %s (%v), want {\"offset_ms\":%d}", rec.Body, err, tc.want.Milliseconds())
				}
			case tc.method == "HEAD":
				// No body is sent for HEAD; the status says it all.
			default:
				var e struct {
					Error struct{ Code, Message string }
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != tc.code || e.Error.Message == "" {
					t.Errorf("body %s (%v), want an error with code %q and a message", rec.Body, err, tc.code)
				}
			}
			if tc.status == 405 && rec.Header().Get("Allow") != "GET, POST" {
				t.Errorf("Allow %q, want \"GET, POST\"", rec.Header().Get("Allow"))
			}
		})
	}
}

// Bad input never moves the clock; good input moves it exactly as the
// answer says; nothing panics.
func FuzzHandler(f *testing.F) {
	for _, s := range []string{
		`{"offset_ms":-280}`, `{"step_ms":3}`, `{"step_ms":-600000}`, `{}`, `{"offset_ms":1,"step_ms":2}`,
		`{"step_ms":1.5}`, `{"step_ms":1} x`, `null`, `{"offset_ms":null,"step_ms":4}`, `{"Step_MS":4}`,
		`{"offset_ms":3153600000001}`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		_, c := newClock()
		c.SetOffset(-7 * time.Millisecond)
		before := c.Offset()
		rec := serve(c, "POST", body)
		switch rec.Code {
		case 200:
			var got struct {
				OffsetMs *int64 `json:"offset_ms"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.OffsetMs == nil {
				t.Fatalf("200 with body %s (%v)", rec.Body, err)
			}
			if c.Offset().Milliseconds() != *got.OffsetMs {
				t.Fatalf("answered offset %d ms, clock has %v", *got.OffsetMs, c.Offset())
			}
			if d := c.Offset(); d < -offsetclock.MaxOffset || d > offsetclock.MaxOffset {
				t.Fatalf("offset %v beyond ±MaxOffset", d)
			}
		case 400:
			if c.Offset() != before {
				t.Fatalf("rejected body %q moved the offset from %v to %v", body, before, c.Offset())
			}
			var e struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != "bad_request" || e.Error.Message == "" {
				t.Fatalf("400 with body %s (%v)", rec.Body, err)
			}
		default:
			t.Fatalf("status %d for a POST", rec.Code)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestHandlerSlew(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"slew", `{"slew_ms":-1000,"over_ms":12000}`, 200},
		{"over alone", `{"over_ms":12000}`, 400},
		{"slew alone", `{"slew_ms":-1000}`, 400},
		{"too fast", `{"slew_ms":-1000,"over_ms":1000}`, 400},
		{"no duration", `{"slew_ms":0,"over_ms":0}`, 400},
		{"with a step", `{"slew_ms":-1,"over_ms":100,"step_ms":1}`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, c := newClock()
			rec := serve(c, "POST", tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tc.status)
			}
			base.Advance(6 * time.Second)
			want := time.Duration(0)
			if tc.status == 200 {
				want = -500 * time.Millisecond
			}
			if got := c.Offset(); got != want {
				t.Errorf("offset %v half way, want %v", got, want)
			}
		})
	}
}
