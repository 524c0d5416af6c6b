package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

func TestDecodeWorkedExample(t *testing.T) {
	f := newFixture(t, nil, nil)
	r := f.do(req{target: "/v1/ids/" + example + "/decode"})
	if r.status != http.StatusOK {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	var got map[string]any
	dec := json.NewDecoder(strings.NewReader(r.body))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id":            example,
		"layout":        "v1",
		"created_at":    "2026-09-26T12:00:00.000Z",
		"region":        "0",
		"region_number": json.Number("0"),
		"machine":       json.Number("37"),
		"sequence":      json.Number("5"),
	}
	if len(got) != len(want) {
		t.Errorf("decoded has fields %v, want exactly %v", keys(got), keys(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
}

// TestDecodeSchedule decodes with a v1→v2 schedule: the DESIGN v2 example
// after the cutover.
func TestDecodeSchedule(t *testing.T) {
	sched, err := snowfence.ParseSchedule("v1,v2@2028-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, nil, func(c *Config) { c.Schedule = sched })
	f.clock.Set(time.Date(2031, 3, 1, 9, 30, 0, 0, time.UTC))
	r := f.do(req{target: "/v1/ids/683244571854022659/decode"})
	want := `{"id":"683244571854022659","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"2","region_number":2,"machine":170,"sequence":3}`
	if r.status != http.StatusOK || r.body != want {
		t.Errorf("got %d %s\nwant 200 %s", r.status, r.body, want)
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestDecodeRegionNames decodes with the region names a server is
// configured with: a registered number gets its name, an unknown one an
// empty name and a warning; both bodies are as the API describes them.
func TestDecodeRegionNames(t *testing.T) {
	sched, err := snowfence.ParseSchedule("v1,v2@2028-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	names := func(n int) (string, bool) {
		if n == 2 {
			return "eu-west-1", true
		}
		return "", false
	}
	f := newFixture(t, nil, func(c *Config) { c.Schedule, c.RegionNames = sched, names })
	f.clock.Set(time.Date(2031, 3, 1, 9, 30, 0, 0, time.UTC))
	s := loadSpec(t)
	var op operation
	if err := json.Unmarshal(s.Paths["/v1/ids/{id}/decode"]["get"], &op); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ id, want string }{
		{"683244571854022659", `{"id":"683244571854022659","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"eu-west-1","region_number":2,"machine":170,"sequence":3}`},
		{"683244571855595523", `{"id":"683244571855595523","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"","region_number":5,"machine":170,"sequence":3,"warning":"region number 5 is not in the region registry",` +
			`"warnings":[{"code":"unknown_region","message":"region number 5 is not in the region registry"}]}`},
	} {
		r := f.do(req{target: "/v1/ids/" + c.id + "/decode"})
		if r.status != http.StatusOK || r.body != c.want {
			t.Errorf("decode %s: got %d %s\nwant 200 %s", c.id, r.status, r.body, c.want)
		}
		checkResponse(t, s, "decode "+c.id, op.Responses["200"], r)
	}
}

// TestDecodeFutureID decodes an ID dated after the server's clock: the
// issue's 683244571854022659 (2031-03-01, region 2, machine 170, sequence
// 3) on a server whose clock reads 2026 answers 200 with the ID taken
// apart and a warning coded in_future, as the API describes; an ID within
// the clock-skew allowance carries none. Input that is not an ID is still
// refused (TestBadInput).
func TestDecodeFutureID(t *testing.T) {
	sched, err := snowfence.ParseSchedule("v1,v2@2028-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	names := func(n int) (string, bool) { return "eu-west-1", n == 2 }
	f := newFixture(t, nil, func(c *Config) { c.Schedule, c.RegionNames = sched, names })
	s := loadSpec(t)
	for _, path := range []string{"/v1/ids/{id}/decode", "/v1/status/decode/{id}"} {
		var op operation
		if err := json.Unmarshal(s.Paths[path]["get"], &op); err != nil {
			t.Fatal(err)
		}
		target := strings.Replace(path, "{id}", "683244571854022659", 1)
		r := f.do(req{target: target})
		want := `{"id":"683244571854022659","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"eu-west-1","region_number":2,"machine":170,"sequence":3,` +
			`"warnings":[{"code":"in_future","message":"timestamped 2031-03-01T09:30:00.000Z, 38805h30m0s after this server's clock (2026-09-26T12:00:00.000Z): no generator of this fleet can have issued it yet; check the ID, or the clock of the server that issued it"}]}`
		if r.status != http.StatusOK || r.body != want {
			t.Errorf("%s: got %d %s\nwant 200 %s", target, r.status, r.body, want)
		}
		checkResponse(t, s, "decode a future ID on "+path, op.Responses["200"], r)
		if _, documented := op.Responses["422"]; documented {
			t.Errorf("%s documents a 422: decoding never refuses an ID for its date", path)
		}
	}
	for _, c := range []struct {
		name, id string
		future   bool
	}{
		{"max int64", "9223372036854775807", true},
		{"a minute ahead", mustCompose(t, exampleTime.Add(time.Minute)), true},
		{"a moment ahead (within the skew)", mustCompose(t, exampleTime.Add(500*time.Millisecond)), false},
		{"now", mustCompose(t, exampleTime), false},
	} {
		r := f.do(req{target: "/v1/ids/" + c.id + "/decode"})
		if r.status != http.StatusOK {
			t.Errorf("%s: status %d, body %s; want 200", c.name, r.status, r.body)
			continue
		}
		var got struct {
			Warnings []struct{ Code, Message string } `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(r.body), &got); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		future := slices.ContainsFunc(got.Warnings, func(w struct{ Code, Message string }) bool { return w.Code == "in_future" })
		if future != c.future || (!c.future && len(got.Warnings) > 0) {
			t.Errorf("%s: warnings %+v; want an in_future warning: %v", c.name, got.Warnings, c.future)
		}
	}
	// An unregistered region and a future date: both are said, each with
	// its code; warning keeps the region's message for older callers.
	r := f.do(req{target: "/v1/ids/683244571855595523/decode"})
	want := `{"id":"683244571855595523","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"","region_number":5,"machine":170,"sequence":3,` +
		`"warning":"region number 5 is not in the region registry","warnings":[{"code":"unknown_region","message":"region number 5 is not in the region registry"},` +
		`{"code":"in_future","message":"timestamped 2031-03-01T09:30:00.000Z, 38805h30m0s after this server's clock (2026-09-26T12:00:00.000Z): no generator of this fleet can have issued it yet; check the ID, or the clock of the server that issued it"}]}`
	if r.status != http.StatusOK || r.body != want {
		t.Errorf("unknown region in the future: got %d %s\nwant 200 %s", r.status, r.body, want)
	}
}
