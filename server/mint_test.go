package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

func TestMintOne(t *testing.T) {
	f := newFixture(t, nil, nil)
	var got []string
	for range 6 {
		r := f.post("/v1/ids", "")
		if r.status != http.StatusOK {
			t.Fatalf("POST /v1/ids: status %d, body %s", r.status, r.body)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q, want application/json", ct)
		}
		got = append(got, r.body)
	}
	// The clock stands still, so the sixth ID is sequence 5 at the worked
	// example's instant: the worked example itself.
	want := `{"id":"` + example + `","id_num":` + example + `}`
	if got[5] != want {
		t.Errorf("sixth ID body = %s, want %s", got[5], want)
	}
	if want0 := `{"id":"97301141913751552","id_num":97301141913751552}`; got[0] != want0 {
		t.Errorf("first ID body = %s, want %s", got[0], want0)
	}
}

// TestIDNumExact checks that id_num is the exact integer literal for IDs
// above 2^53, where a float64 would round.
func TestIDNumExact(t *testing.T) {
	f := newFixture(t, nil, nil)
	for range 50 {
		r := f.post("/v1/ids", "")
		var b struct {
			ID    string      `json:"id"`
			IDNum json.Number `json:"id_num"`
		}
		dec := json.NewDecoder(strings.NewReader(r.body))
		dec.UseNumber()
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			t.Fatalf("body %s: %v", r.body, err)
		}
		if string(b.IDNum) != b.ID {
			t.Fatalf("id_num literal %s, want exactly the id %s", b.IDNum, b.ID)
		}
		v, err := strconv.ParseInt(b.ID, 10, 64)
		if err != nil || v <= 1<<53 {
			t.Fatalf("id %s: want an int64 above 2^53 for this test (%v)", b.ID, err)
		}
		if int64(float64(v)) == v && v%2 == 1 {
			t.Fatalf("id %d survives float64; the test does not exercise precision", v)
		}
	}
}

func TestBatch(t *testing.T) {
	f := newFixture(t, nil, nil)
	tests := []struct {
		name   string
		target string
		body   string
		want   int
	}{
		{"body 1", "/v1/ids:batch", `{"count":1}`, 1},
		{"body 1000", "/v1/ids:batch", `{"count": 1000}`, 1000},
		{"body with white space", "/v1/ids:batch", " \n{ \"count\" :\t7 }\r\n", 7},
		{"escaped field name", "/v1/ids:batch", `{"\u0063ount":3}`, 3},
		{"query on ids", "/v1/ids?count=1000", "", 1000},
		{"query 1 on ids", "/v1/ids?count=1", "", 1},
		{"query on batch", "/v1/ids:batch?count=12", "", 12},
	}
	var last snowfence.ID
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := batchIDs(t, f.post(tt.target, tt.body))
			if len(ids) != tt.want {
				t.Fatalf("got %d IDs, want %d", len(ids), tt.want)
			}
			for i, id := range ids {
				if id <= last {
					t.Fatalf("ID %d (%d) is not above the one before (%d)", i, id, last)
				}
				last = id
			}
		})
	}
}

// TestBatchSpillsIntoNextMillisecond checks ordering when batches use up a
// millisecond's 4,096 sequence numbers.
func TestBatchSpillsIntoNextMillisecond(t *testing.T) {
	f := newFixture(t, nil, nil)
	var all []snowfence.ID
	for range 5 {
		all = append(all, batchIDs(t, f.post("/v1/ids:batch", `{"count":1000}`))...)
	}
	seen := map[snowfence.ID]bool{}
	for i, id := range all {
		if seen[id] || i > 0 && id <= all[i-1] {
			t.Fatalf("ID %d (%d) repeats or does not increase", i, id)
		}
		seen[id] = true
	}
	d0, _ := snowfence.Decode(all[0])
	dn, _ := snowfence.Decode(all[len(all)-1])
	if !dn.CreatedAt.After(d0.CreatedAt) {
		t.Errorf("5,000 IDs stayed in one millisecond (%s); want a spill into the next", d0.CreatedAt)
	}
}

// TestRefusals checks that every refusal is a 503 with Retry-After and a
// code that says which, on every mint endpoint and on health.
func TestRefusals(t *testing.T) {
	unsynced := func() (snowfence.ClockStatus, error) {
		return snowfence.ClockStatus{Synchronized: false, MaxError: 16 * time.Second}, nil
	}
	tests := []struct {
		name       string
		gcfg       func(*snowfence.Config)
		setup      func(*fixture)
		wantCode   string
		wantReason string
	}{
		{"no grant", func(c *snowfence.Config) { c.Lease = nilLease{} }, nil, CodeFenced, "no-lease"},
		{"clock stepped back", nil, func(f *fixture) {
			f.post("/v1/ids", "")
			f.clock.Step(-time.Second)
		}, CodeClockBackwards, ""},
		{"clock unsynchronized", func(c *snowfence.Config) {
			c.ClockPolicy, c.ClockStatus = snowfence.ClockRequire, unsynced
		}, nil, CodeClockUnsynchronized, ""},
		// The default clock policy (require): /healthz fails under each
		// of its rules.
		{"clock unsynchronized, default policy", func(c *snowfence.Config) {
			c.ClockPolicy, c.ClockStatus = "", unsynced
		}, nil, CodeClockUnsynchronized, ""},
		{"clock error above the bound, default policy", func(c *snowfence.Config) {
			c.ClockPolicy, c.ClockStatus = "", func() (snowfence.ClockStatus, error) {
				return snowfence.ClockStatus{Synchronized: true, MaxError: 6 * time.Millisecond}, nil
			}
		}, nil, CodeClockUnsynchronized, ""},
		{"clock jumped forward, default policy", func(c *snowfence.Config) {
			c.ClockPolicy, c.ClockStatus = "", func() (snowfence.ClockStatus, error) {
				return snowfence.ClockStatus{Synchronized: true, MaxError: time.Millisecond}, nil
			}
		}, func(f *fixture) {
			f.post("/v1/ids", "")
			f.clock.Step(10 * time.Minute)
		}, CodeClockUnsynchronized, ""},
		{"layout exhausted", nil, func(f *fixture) {
			f.clock.Set(snowfence.V1().LastInstant().Add(time.Hour))
		}, CodeLayoutExhausted, ""},
		{"no layout for the machine", func(c *snowfence.Config) {
			// v2 has 9 machine bits. (snowfence.Static(600, 1) is refused
			// by New; a lease that does not tell its placement is
			// refused on use.)
			c.Lease = grantLease{&snowfence.Grant{Machine: 600, Region: 1, Token: 1, LimitMs: math.MaxInt64}}
			c.Schedule = snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V2()})
		}, nil, CodeNoLayout, ""},
		{"closed", nil, func(f *fixture) { f.gen.Close() }, CodeClosed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.gcfg, nil)
			if tt.setup != nil {
				tt.setup(f)
			}
			for _, r := range []req{
				{method: "POST", target: "/v1/ids"},
				{method: "POST", target: "/v1/ids?count=10"},
				{method: "POST", target: "/v1/ids:batch", body: `{"count":10}`, contentType: "application/json"},
				{target: "/healthz"},
				{target: "/readyz"},
			} {
				got := f.do(r)
				if got.status != http.StatusServiceUnavailable {
					t.Errorf("%s %s: status %d, body %s; want 503", r.method, r.target, got.status, got.body)
					continue
				}
				if ra := got.header.Get("Retry-After"); ra != "1" {
					t.Errorf("%s %s: Retry-After = %q, want 1", r.method, r.target, ra)
				}
				e := errorOf(t, got)
				if e.Code != tt.wantCode || tt.wantReason != "" && e.Reason != tt.wantReason {
					t.Errorf("%s %s: code %q reason %q, want %q %q (message %q)", r.method, r.target, e.Code, e.Reason, tt.wantCode, tt.wantReason, e.Message)
				}
				if strings.Contains(got.body, `"id"`) || strings.Contains(got.body, `"ids"`) {
					t.Errorf("%s %s: a refusal carries IDs: %s", r.method, r.target, got.body)
				}
			}
		})
	}
}

// TestRefusalMapping checks the code of every sentinel, also when wrapped.
func TestRefusalMapping(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{snowfence.ErrFenced, CodeFenced},
		{&snowfence.FencedError{Reason: "renewal-overdue"}, CodeFenced},
		{&snowfence.ClockBackwardsError{Step: time.Second}, CodeClockBackwards},
		{snowfence.ErrClockUnsynchronized, CodeClockUnsynchronized},
		{snowfence.ErrLayoutExhausted, CodeLayoutExhausted},
		{snowfence.ErrNoLayout, CodeNoLayout},
		{snowfence.ErrClosed, CodeClosed},
		{fmt.Errorf("wrapped: %w", snowfence.ErrClosed), CodeClosed},
		{context.Canceled, CodeCanceled},
		{context.DeadlineExceeded, CodeCanceled},
		{errors.New("something else"), CodeUnavailable},
	}
	for _, tt := range tests {
		e := refusal(tt.err)
		if e.code != tt.want || e.status != http.StatusServiceUnavailable {
			t.Errorf("refusal(%v) = %d %q, want 503 %q", tt.err, e.status, e.code, tt.want)
		}
	}
	if e := refusal(&snowfence.FencedError{Reason: "mark-reached"}); e.reason != "mark-reached" {
		t.Errorf("fenced reason = %q, want mark-reached", e.reason)
	}
}

// TestCanceledWhileWaiting checks that a request whose context ends while
// the generator waits for the next millisecond returns at once and leaves
// nobody waiting on the clock.
func TestCanceledWhileWaiting(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.clock.AutoAdvance(false) // the clock stands still: the 4,097th ID waits
	for range 4 {
		batchIDs(t, f.post("/v1/ids:batch", `{"count":1000}`))
	}
	batchIDs(t, f.post("/v1/ids?count=96", ""))

	for _, target := range []string{"/v1/ids", "/v1/ids?count=5"} {
		ctx, cancel := context.WithCancel(context.Background())
		hr := httptest.NewRequestWithContext(ctx, http.MethodPost, target, nil)
		w := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.h.ServeHTTP(w, hr)
		}()
		if err := f.clock.BlockUntilWaiters(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the handler did not return after its context was canceled", target)
		}
		if w.Code != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d, want 503", target, w.Code)
		}
		e := errorOf(t, response{status: w.Code, header: w.Header(), body: w.Body.String()})
		if e.Code != CodeCanceled {
			t.Errorf("%s: code %q, want %q", target, e.Code, CodeCanceled)
		}
		if n := f.clock.Waiters(); n != 0 {
			t.Errorf("%s: %d waiters left on the clock", target, n)
		}
	}
	// Time moves on: issuing resumes.
	f.clock.Advance(time.Millisecond)
	if r := f.post("/v1/ids", ""); r.status != http.StatusOK {
		t.Errorf("after the clock moved: status %d, body %s", r.status, r.body)
	}
}

// TestOverHTTP runs requests through a real net/http server: chunked and
// oversize bodies, Content-Length of batch responses.
func TestOverHTTP(t *testing.T) {
	f := newFixture(t, nil, nil)
	ts := httptest.NewServer(f.h)
	defer ts.Close()
	post := func(target string, body *strings.Reader, chunked bool) *http.Response {
		t.Helper()
		hr, err := http.NewRequest(http.MethodPost, ts.URL+target, body)
		if err != nil {
			t.Fatal(err)
		}
		hr.Header.Set("Content-Type", "application/json")
		if chunked {
			hr.ContentLength = -1
			hr.TransferEncoding = []string{"chunked"}
		}
		res, err := ts.Client().Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := post("/v1/ids:batch", strings.NewReader(`{"count":500}`), true)
	if res.StatusCode != 200 || res.ContentLength <= 0 {
		t.Errorf("chunked batch request: status %d, Content-Length %d; want 200 with a length", res.StatusCode, res.ContentLength)
	}
	res.Body.Close()
	big := `{"count":5` + strings.Repeat(" ", 5000) + `}`
	for _, chunked := range []bool{false, true} {
		res := post("/v1/ids:batch", strings.NewReader(big), chunked)
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("oversize body (chunked %v): status %d, want 413", chunked, res.StatusCode)
		}
		res.Body.Close()
	}
	res = post("/v1/ids", strings.NewReader(""), false)
	if res.StatusCode != 200 {
		t.Errorf("single ID over HTTP: status %d", res.StatusCode)
	}
	res.Body.Close()
}

// Every answer that carries IDs says Cache-Control: no-store: a cache or
// proxy that replayed one would hand the same IDs out twice.
func TestMintAnswersAreNotStored(t *testing.T) {
	f := newFixture(t, nil, nil)
	for _, c := range []struct{ target, body string }{
		{"/v1/ids", ""}, {"/v1/ids", "{}"}, {"/v1/ids?count=3", ""}, {"/v1/ids:batch", `{"count":3}`},
	} {
		r := f.post(c.target, c.body)
		if r.status != http.StatusOK {
			t.Fatalf("POST %s %s: %d %s", c.target, c.body, r.status, r.body)
		}
		if got := r.header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("POST %s %s: Cache-Control %q, want no-store", c.target, c.body, got)
		}
	}
}
