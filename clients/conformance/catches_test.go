package conformance

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestDriverCatches shows that the driver's checks can fail: the Go runner,
// started with SNOWFENCE_CONFORMANCE_BREAK (a test-only fault of the
// runner: clients/go/runner), misreports what its client did in one way at
// a time, and the scenario that checks for it must fail with the check's
// words.
func TestDriverCatches(t *testing.T) {
	all := map[string]scenario{}
	for _, sc := range loadScenarios(t) {
		all[sc.Name] = sc
	}
	srv := theServers(t)
	for _, c := range []struct{ broken, scenario, want string }{
		{"invent", "increasing", "no proxy passed it in a sound answer"},
		{"twice", "increasing", "handed out 2 times"},
		{"float", "increasing", "no proxy passed it in a sound answer"},
		{"retry_after", "retry_after_503", "after an answer with Retry-After"},
		{"retry_after", "rate_limited_429", "after an answer with Retry-After"},
		{"decode", "decode", "(snowfence decode --json)"},
		{"error_kind", "all_dead", "want unavailable"},
		{"error_kind", "rejected_4xx", "want rejected"},
	} {
		t.Run(c.broken+"/"+c.scenario, func(t *testing.T) {
			sc, ok := all[c.scenario]
			if !ok {
				t.Fatalf("no scenario %q", c.scenario)
			}
			rec := &recorder{TB: t}
			r := startRunner(t, "go", "SNOWFENCE_CONFORMANCE_BREAK="+c.broken)
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.t = rec
				play(rec, r, srv, sc)
			}()
			<-done
			got := rec.text()
			if !strings.Contains(got, c.want) {
				t.Errorf("with the runner broken (%s), scenario %s reported %q; want a failure containing %q", c.broken, c.scenario, got, c.want)
			}
		})
	}
}

// recorder is a testing.TB whose failures are recorded, not reported: a
// Fatal ends the goroutine (as testing's does) after recording.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs) > 0
}

func (r *recorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}
