package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/server"
)

// The --test-clock-offset tests step the wall clock of a running serve
// through POST /test/clock-offset, as the fault-injection suite does, and
// check the generator's answer over HTTP.

// mintReply is one POST /v1/ids?count=N answered: the IDs on a 200, the
// error on a refusal, and when the answer arrived.
type mintReply struct {
	status int
	ids    []snowfence.ID
	code   string
	at     time.Time
	body   string
}

// mint asks for count IDs.
func mint(t *testing.T, s *service, count int) mintReply {
	t.Helper()
	r := call(t, "POST", s.url+"/v1/ids?count="+strconv.Itoa(count), "", "")
	m := mintReply{status: r.status, at: time.Now(), body: r.body}
	var b struct {
		IDs   []snowfence.ID
		Error struct{ Code string }
	}
	if err := json.Unmarshal([]byte(r.body), &b); err != nil {
		t.Fatalf("POST /v1/ids: %d %s: %v", r.status, r.body, err)
	}
	m.ids, m.code = b.IDs, b.Error.Code
	if r.status == 200 && len(m.ids) != count {
		t.Fatalf("POST /v1/ids?count=%d: 200 with %d IDs", count, len(m.ids))
	}
	return m
}

// stepClock posts body to /test/clock-offset and returns the offset it
// answers with.
func stepClock(t *testing.T, s *service, body string) int64 {
	t.Helper()
	r := call(t, "POST", s.url+"/test/clock-offset", "application/json", body)
	var got struct {
		OffsetMs *int64 `json:"offset_ms"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); r.status != 200 || err != nil || got.OffsetMs == nil {
		t.Fatalf("POST /test/clock-offset %s: %d %s", body, r.status, r.body)
	}
	return *got.OffsetMs
}

// waitIssuing polls /readyz (bounded) until the service issues.
func waitIssuing(t *testing.T, s *service) {
	t.Helper()
	waitReady(t, s.url, 10*time.Second)
}

// waitReady polls base+"/readyz" until it answers 200, for at most within.
func waitReady(t *testing.T, base string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := call(t, "GET", base+"/readyz", "", "")
		if r.status == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within %s: %d %s", base, within, r.status, r.body)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// A 280 ms step back is refused (503 clock_backwards, /healthz refusing)
// until the stepped clock passes the last issued timestamp again; a 3 ms step
// back is waited out. IDs stay unique and increasing throughout.
func TestE2ETestClockOffset(t *testing.T) {
	t.Parallel()
	s := startService(t, t.TempDir(), "--machines", "9-9", "--test-clock-offset")
	waitIssuing(t, s)
	if r := call(t, "GET", s.url+"/test/clock-offset", "", ""); r.status != 200 || strings.TrimSpace(r.body) != `{"offset_ms":0}` {
		t.Fatalf("GET /test/clock-offset: %d %s, want 200 {\"offset_ms\":0}", r.status, r.body)
	}
	var all []snowfence.ID // every ID issued, in the order issued

	// The refusal window is observable only if the step lands within about
	// 275 ms of the last ID; a machine too loaded for that gets another try.
	var offset int64
	observed := false
	for attempt := 1; attempt <= 3 && !observed; attempt++ {
		before := mint(t, s, 10)
		if before.status != 200 {
			t.Fatalf("before the step: %d %s", before.status, before.body)
		}
		all = append(all, before.ids...)
		// The last ID's timestamp is the stepped clock's reading at issue.
		lastMs := before.ids[len(before.ids)-1].Time().UnixMilli()
		prev := offset
		stepAt := time.Now()
		offset = stepClock(t, s, `{"step_ms":-280}`)
		if offset != prev-280 {
			t.Fatalf("offset %d ms after a -280 ms step from %d ms", offset, prev)
		}
		refused := mint(t, s, 10)
		health := call(t, "GET", s.url+"/healthz", "", "")
		healthAt := time.Now()

		// In true (unstepped) milliseconds: the last ID was issued at
		// lastMs-prev; the stepped clock is back within the 5 ms waited out
		// at lastMs-prev+275 and not before.
		backAt := lastMs - prev + 275
		if healthAt.UnixMilli() < backAt-5 {
			observed = true
			if refused.status != 503 || refused.code != server.CodeClockBackwards {
				t.Errorf("right after the step: %d %s, want 503 %s", refused.status, refused.body, server.CodeClockBackwards)
			}
			var h struct {
				Error  struct{ Code string }
				Health struct{ Status string }
			}
			if err := json.Unmarshal([]byte(health.body), &h); health.status != 503 || err != nil || h.Health.Status != "refusing" || h.Error.Code != server.CodeClockBackwards {
				t.Errorf("/healthz right after the step: %d %s, want 503 refusing with %s", health.status, health.body, server.CodeClockBackwards)
			}
		} else {
			t.Logf("attempt %d: the machine took %d ms from the last ID to /healthz; too slow to see the refusal, trying again",
				attempt, healthAt.UnixMilli()-(lastMs-prev))
		}
		if refused.status == 200 {
			all = append(all, refused.ids...)
		}

		// Recovery: poll (bounded) until IDs come again.
		deadline := time.Now().Add(5 * time.Second)
		var ok mintReply
		for {
			ok = mint(t, s, 10)
			if ok.status == 200 {
				break
			}
			if ok.status != 503 || ok.code != server.CodeClockBackwards {
				t.Fatalf("while the clock is behind: %d %s, want 503 %s", ok.status, ok.body, server.CodeClockBackwards)
			}
			if time.Now().After(deadline) {
				t.Fatalf("still refusing 5 s after a 280 ms step: %s", ok.body)
			}
			time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
		}
		all = append(all, ok.ids...)
		t.Logf("attempt %d: issuing again %d ms after the step", attempt, ok.at.Sub(stepAt).Milliseconds())
		if refused.status != 200 && ok.at.UnixMilli() < backAt {
			t.Errorf("issuing again at %d, before the stepped clock could pass the last ID (%d)", ok.at.UnixMilli(), backAt)
		}
		// The new IDs carry the stepped clock: 280 ms behind true time.
		if first, last := ok.ids[0].Time().UnixMilli(), ok.ids[len(ok.ids)-1].Time().UnixMilli(); first < lastMs || last > ok.at.UnixMilli()+offset {
			t.Errorf("IDs after the step stamped %d..%d ms, want within [%d, %d]", first, last, lastMs, ok.at.UnixMilli()+offset)
		}
	}
	if !observed {
		t.Fatal("three attempts, none fast enough to see the refusal window")
	}

	// A 3 ms step back is within --max-backward-wait (5 ms): waited out.
	if got := stepClock(t, s, `{"step_ms":-3}`); got != offset-3 {
		t.Fatalf("offset %d ms after a -3 ms step from %d ms", got, offset)
	}
	for i := range 20 {
		m := mint(t, s, 10)
		if m.status != 200 {
			t.Fatalf("request %d after a 3 ms step back: %d %s, want 200", i, m.status, m.body)
		}
		all = append(all, m.ids...)
	}
	if r := call(t, "GET", s.url+"/healthz", "", ""); r.status != 200 {
		t.Errorf("/healthz after a 3 ms step back: %d %s", r.status, r.body)
	}

	for i := 1; i < len(all); i++ {
		if all[i] <= all[i-1] {
			t.Fatalf("ID %d (%d) is not above the one before it (%d)", i, all[i], all[i-1])
		}
	}
	s.stop(t)
	if !strings.Contains(s.stderr.String(), "test clock offset endpoint is enabled") {
		t.Errorf("no warning that the test clock endpoint is on in the log:\n%s", s.stderr)
	}
	t.Logf("%d IDs, strictly increasing, across a 280 ms and a 3 ms step back", len(all))
}

// Without the flag the path is the server's ordinary 404 and nothing is
// logged about it; SNOWFENCE_TEST_CLOCK_OFFSET=true turns it on like the flag.
func TestE2ETestClockOffsetOffByDefault(t *testing.T) {
	s := startService(t, t.TempDir())
	for _, method := range []string{"GET", "POST"} {
		r := call(t, method, s.url+"/test/clock-offset", "application/json", `{"step_ms":-280}`)
		var e struct{ Error struct{ Code string } }
		if err := json.Unmarshal([]byte(r.body), &e); r.status != 404 || err != nil || e.Error.Code != server.CodeNotFound {
			t.Errorf("%s /test/clock-offset without the flag: %d %s, want 404 %s", method, r.status, r.body, server.CodeNotFound)
		}
	}
	waitIssuing(t, s)
	if m := mint(t, s, 10); m.status != 200 {
		t.Errorf("POST /v1/ids: %d %s", m.status, m.body)
	}
	s.stop(t)
	if strings.Contains(s.stderr.String(), "test clock offset") {
		t.Errorf("the log mentions the test clock without the flag:\n%s", s.stderr)
	}

	t.Setenv("SNOWFENCE_TEST_CLOCK_OFFSET", "true")
	s = startService(t, t.TempDir())
	if got := stepClock(t, s, `{"offset_ms":-1000}`); got != -1000 {
		t.Errorf("with SNOWFENCE_TEST_CLOCK_OFFSET=true: offset %d, want -1000", got)
	}
	s.stop(t)
}

// serve --help names the flag as test-only.
func TestServeTestClockOffsetUsage(t *testing.T) {
	_, stdout, stderr := runCLI(t, "serve", "--help")
	out := stdout + stderr
	i := strings.Index(out, "-test-clock-offset")
	if i < 0 || !strings.Contains(out[i:], "TEST ONLY:") || !strings.Contains(out[i:], "never enable in production") {
		t.Errorf("serve --help does not say --test-clock-offset is test-only:\n%s", out)
	}
}
