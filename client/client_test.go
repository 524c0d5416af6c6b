package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

func TestConfigErrors(t *testing.T) {
	ep := []string{"http://127.0.0.1:1"}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no endpoints", Config{}},
		{"relative endpoint", Config{Endpoints: []string{"ids.example"}}},
		{"other scheme", Config{Endpoints: []string{"ftp://ids.example"}}},
		{"endpoint with a query", Config{Endpoints: []string{"http://ids.example/?a=1"}}},
		{"health URLs of another length", Config{Endpoints: ep, HealthURLs: []string{"http://a/healthz", "http://b/healthz"}}},
		{"bad health URL", Config{Endpoints: ep, HealthURLs: []string{"/healthz"}}},
		{"HTTPClient and TLS", Config{Endpoints: ep, HTTPClient: &http.Client{}, TLS: &tls.Config{}}},
		{"negative MaxAge", Config{Endpoints: ep, MaxAge: -time.Second}},
		{"RefillPeriod not below MaxAge", Config{Endpoints: ep, MaxAge: time.Second, RefillPeriod: time.Second}},
		{"MaxBackoff below BaseBackoff", Config{Endpoints: ep, BaseBackoff: time.Second, MaxBackoff: time.Millisecond}},
		{"negative MinRefill", Config{Endpoints: ep, MinRefill: -1}},
		{"MaxBuffer below MinRefill", Config{Endpoints: ep, MinRefill: 100, MaxBuffer: 10}},
		{"huge MaxBuffer", Config{Endpoints: ep, MaxBuffer: 1 << 30}},
		{"LowWater not below MaxBuffer", Config{Endpoints: ep, MaxBuffer: 100, LowWater: 100}},
		{"negative FailureThreshold", Config{Endpoints: ep, FailureThreshold: -3}},
		{"zero Schedule", Config{Endpoints: ep, Schedule: &snowfence.Schedule{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.cfg)
			if !errors.Is(err, ErrInvalidConfig) || c != nil {
				t.Fatalf("New = %v, %v; want nil and an error matching ErrInvalidConfig", c, err)
			}
		})
	}
	c, err := New(Config{Endpoints: []string{"http://127.0.0.1:1/"}})
	if err != nil {
		t.Fatalf("New with only an endpoint: %v", err)
	}
	c.Close()
}

// TestRealServer takes IDs from the real server package: Next and NextN
// hand out increasing IDs, each once, across several refills.
func TestRealServer(t *testing.T) {
	ts := realServer(t, true)
	c := newClient(t, Config{Endpoints: []string{ts.URL}})
	ctx := ctxT(t)
	var last snowfence.ID
	for i := range 5000 {
		var ids []snowfence.ID
		if i%3 == 0 {
			got, err := c.NextN(ctx, 1+i%1000)
			if err != nil {
				t.Fatal(err)
			}
			ids = got
		} else {
			id, err := c.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ids = []snowfence.ID{id}
		}
		for _, id := range ids {
			if id <= last {
				t.Fatalf("ID %d after %d: not increasing", id, last)
			}
			last = id
		}
	}
	st := c.Stats()
	if st.Requests < 2 || st.Failures != 0 || st.HandedOut+uint64(st.Buffered)+st.Expired != st.Received {
		t.Errorf("stats %+v: want several requests, no failures, received = handed out + buffered + expired", st)
	}
	if _, err := c.NextN(ctx, 0); !errors.Is(err, snowfence.ErrInvalidCount) {
		t.Errorf("NextN(0) error %v, want ErrInvalidCount", err)
	}
	if _, err := c.NextN(ctx, 1001); !errors.Is(err, snowfence.ErrInvalidCount) {
		t.Errorf("NextN(1001) error %v, want ErrInvalidCount", err)
	}
}

// TestMaxAgeFromSend: a buffered ID expires MaxAge after its request was
// sent, not after the answer came, and is never handed out.
func TestMaxAgeFromSend(t *testing.T) {
	clk := fakeclock.New(exampleTime)
	release := make(chan struct{})
	var s *scripted
	s = newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		<-release // answer only once the test has moved the clock
		s.ok(w, r)
	}, func(w http.ResponseWriter, r *http.Request) { s.ok(w, r) })
	s.reqs = make(chan string, 10)
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}, Clock: clk, MinRefill: 8, LowWater: 1})
	ctx := ctxT(t)

	got := make(chan snowfence.ID, 1)
	go func() {
		id, _ := c.Next(ctx)
		got <- id
	}()
	if q := <-s.reqs; q != "count=8" {
		t.Fatalf("first request %q, want count=8", q)
	}
	clk.Advance(600 * time.Millisecond) // the answer takes 600 ms to come
	close(release)
	if id := <-got; id != 1 {
		t.Fatalf("first ID %d, want 1", id)
	}
	clk.Advance(399 * time.Millisecond) // 999 ms after the send
	if id, err := c.Next(ctx); id != 2 || err != nil {
		t.Fatalf("Next 999 ms after the send = %d, %v; want 2", id, err)
	}
	clk.Advance(time.Millisecond) // 1 s after the send: IDs 3..8 expire
	id, err := c.Next(ctx)
	if err != nil || id != 9 {
		t.Fatalf("Next at MaxAge = %d, %v; want 9, the first of a new batch", id, err)
	}
	if st := c.Stats(); st.Expired != 6 || st.Received != st.HandedOut+uint64(st.Buffered)+st.Expired {
		t.Errorf("stats %+v: want 6 expired, received = handed out + buffered + expired", st)
	}
}

// TestRetryAfter: a 429 is retried on the same endpoint no sooner than its
// Retry-After, and does not take the endpoint out of service.
func TestRetryAfter(t *testing.T) {
	clk := fakeclock.New(exampleTime)
	var s *scripted
	s = newScripted(t,
		func(w http.ResponseWriter, r *http.Request) { writeError(w, 429, "2", "rate_limited") },
		func(w http.ResponseWriter, r *http.Request) { writeError(w, 429, "2", "rate_limited") },
		func(w http.ResponseWriter, r *http.Request) { writeError(w, 429, "2", "rate_limited") },
		func(w http.ResponseWriter, r *http.Request) { s.ok(w, r) })
	s.reqs = make(chan string, 10)
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}, Clock: clk, FailureThreshold: 2})
	c.jitter = func(time.Duration) time.Duration { return 0 }
	ctx := ctxT(t)
	got := make(chan error, 1)
	go func() {
		_, err := c.Next(ctx)
		got <- err
	}()
	for range 3 {
		<-s.reqs
		if err := clk.BlockUntilWaiters(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2*time.Second - time.Millisecond)
		if n := clk.Waiters(); n != 1 {
			t.Fatalf("the client stopped waiting %v before Retry-After", time.Millisecond)
		}
		clk.Advance(time.Millisecond)
	}
	<-s.reqs
	if err := <-got; err != nil {
		t.Fatalf("Next after three 429s: %v", err)
	}
	if st := c.Stats(); st.Endpoint != 0 || st.Failures != 3 {
		t.Errorf("stats %+v: want the endpoint still in service, 3 failures", st)
	}
}

// TestRejected: a 4xx other than 429 is returned at once, not retried.
func TestRejected(t *testing.T) {
	s := newScripted(t, func(w http.ResponseWriter, r *http.Request) { writeError(w, 400, "", "invalid_query") })
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}})
	_, err := c.Next(ctxT(t))
	var se *ServerError
	if !errors.Is(err, ErrRejected) || !errors.As(err, &se) || se.Code != "invalid_query" || se.Status != 400 {
		t.Fatalf("Next error %v; want a *ServerError 400 invalid_query matching ErrRejected", err)
	}
	if n := s.count(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestUnavailable: a refill that keeps failing gives up after MaxAttempts
// requests, with the last server error inside.
func TestUnavailable(t *testing.T) {
	s := newScripted(t, func(w http.ResponseWriter, r *http.Request) { writeError(w, 503, "1", "fenced") })
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}, MaxAttempts: 4, BaseBackoff: time.Microsecond,
		MaxBackoff: time.Microsecond, MaxRetryAfter: time.Microsecond, ProbeInterval: time.Hour})
	_, err := c.Next(ctxT(t))
	var se *ServerError
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrRefused) || !errors.As(err, &se) || se.Code != "fenced" || se.RetryAfter != time.Second {
		t.Fatalf("Next error %v; want ErrUnavailable around a 503 fenced with Retry-After 1s", err)
	}
	if n := s.count(); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
}

// TestBadResponses: a 200 that is not the batch asked for yields no IDs.
func TestBadResponses(t *testing.T) {
	bodies := []string{`{"ids":["3","2"]}`, `{"ids":["1"]}`, `{"ids":["1","2"],"x":1}`, `not json`}
	for _, body := range bodies {
		t.Run(body, func(t *testing.T) {
			s := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(body))
			})
			c := newClient(t, Config{Endpoints: []string{s.ts.URL}, MinRefill: 2, MaxAttempts: 2, BaseBackoff: time.Microsecond, MaxBackoff: time.Microsecond})
			id, err := c.Next(ctxT(t))
			if !errors.Is(err, ErrBadResponse) || !errors.Is(err, ErrUnavailable) || id != 0 {
				t.Fatalf("Next = %d, %v; want ErrUnavailable around ErrBadResponse", id, err)
			}
			if st := c.Stats(); st.Received != 0 {
				t.Errorf("stats %+v: IDs received from a bad response", st)
			}
		})
	}
}

// TestCloseWhileWaiting: Close ends a waiting Next with ErrClosed, abandons
// the request in flight, and leaves every later call failing.
func TestCloseWhileWaiting(t *testing.T) {
	release := make(chan struct{})
	s := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	s.reqs = make(chan string, 1)
	c, err := New(Config{Endpoints: []string{s.ts.URL}})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := c.Next(context.Background())
		got <- err
	}()
	<-s.reqs
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, ErrClosed) {
		t.Errorf("waiting Next: %v, want ErrClosed", err)
	}
	if _, err := c.NextN(context.Background(), 3); !errors.Is(err, ErrClosed) {
		t.Errorf("NextN after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	close(release)
}

// TestContextEnds: a Next waiting on an empty buffer returns ctx's error.
func TestContextEnds(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	s.reqs = make(chan string, 1)
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := c.Next(ctx)
		got <- err
	}()
	<-s.reqs
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("Next: %v, want context.Canceled", err)
	}
}

// TestRefillSize: the refill size follows the rate, at most doubling or
// halving each time, within MinRefill and the buffer.
func TestRefillSize(t *testing.T) {
	clk := fakeclock.New(exampleTime)
	c := newClient(t, Config{Endpoints: []string{"http://127.0.0.1:1"}, Clock: clk, MinRefill: 10, MaxBuffer: 1000, RefillPeriod: 100 * time.Millisecond})
	c.mu.Lock()
	defer c.mu.Unlock()
	steps := []struct {
		taken   uint64
		elapsed time.Duration
		want    int
	}{
		{0, 0, 10},                        // the first refill is MinRefill
		{10, time.Millisecond, 20},        // fast: doubles, no more
		{20, time.Millisecond, 40},        // and again
		{400, 100 * time.Millisecond, 80}, // 400 per period: doubles to 80
		{80, 100 * time.Millisecond, 80},  // 80 per period: stays
		{1, 100 * time.Millisecond, 40},   // slow: halves, no less
		{0, time.Second, 20},
		{0, time.Second, 10},
		{0, time.Second, 10}, // never under MinRefill
		{100000, time.Millisecond, 20},
	}
	for i, s := range steps {
		c.handedOut += s.taken
		clk.Advance(s.elapsed)
		if got := c.planLocked(); got != s.want || c.low != s.want/2 {
			t.Fatalf("step %d (%d taken in %v): refill %d, low water %d; want %d, %d", i, s.taken, s.elapsed, got, c.low, s.want, s.want/2)
		}
	}
	c.demand = 500
	if got := c.planLocked(); got != 500 {
		t.Errorf("refill with 500 IDs awaited: %d, want 500", got)
	}
}

// TestNextNNoIDPastMaxAge: NextN hands out no ID past MaxAge, even when it
// waits for a refill holding IDs it took from the buffer. NextN takes what the
// buffer holds, then waits for a refill; when the refill is slow (a 503 with
// Retry-After, backoff) the IDs it took aged past MaxAge and were handed out
// anyway (an adversarial review found it), although MaxAge promises "an ID is
// handed out only while less than MaxAge has passed since the request that
// fetched it was sent".
func TestNextNNoIDPastMaxAge(t *testing.T) {
	clk := fakeclock.New(exampleTime)
	var s *scripted
	s = newScripted(t,
		func(w http.ResponseWriter, r *http.Request) { s.ok(w, r) },                        // IDs 1..4
		func(w http.ResponseWriter, r *http.Request) { writeError(w, 503, "2", "fenced") }, // wait 2 s
		func(w http.ResponseWriter, r *http.Request) { s.ok(w, r) },                        // IDs 5..8
	)
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}, Clock: clk, MinRefill: 4, MaxBuffer: 4, LowWater: 1,
		MaxAge: time.Second, MaxAttempts: 3})
	ctx := ctxT(t)
	if id, err := c.Next(ctx); err != nil || id != 1 {
		t.Fatalf("Next = %d, %v; want 1", id, err)
	}
	// IDs 2..4 are buffered, fetched at the start.
	type result struct {
		ids []snowfence.ID
		err error
	}
	done := make(chan result, 1)
	go func() {
		ids, err := c.NextN(ctx, 4)
		done <- result{ids, err}
	}()
	// The refill got the 503 and sleeps on the clock for its Retry-After.
	if err := clk.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	for _, id := range res.ids {
		if id < 5 {
			t.Errorf("NextN handed out ID %d, fetched 3 s before it returned (MaxAge 1 s); got %v", id, res.ids)
			break
		}
	}
	// IDs 2..4 were dropped for age, not handed out, and every ID
	// received is accounted for.
	st := c.Stats()
	if st.Expired < 3 || st.Received != st.HandedOut+st.Expired+st.Discarded+uint64(st.Buffered) {
		t.Errorf("Stats = %+v; want Expired ≥ 3 and Received = HandedOut + Expired + Discarded + Buffered", st)
	}
}

// TestRefillStartsAtLowWater: the caller that takes a refill's IDs down to
// the low-water mark starts the next refill, however soon after they
// arrived. A refill used to end a moment after its last IDs were in the
// buffer, so a caller taking them in between found it still running and
// started none (the Java port's test found it): the buffer then ran dry
// before the next refill was asked for. The hook runs right after the
// first refill's IDs arrive, in the refill's goroutine, before it could
// end the refill the old way.
func TestRefillStartsAtLowWater(t *testing.T) {
	ts := realServer(t, true)
	clk := fakeclock.New(exampleTime)
	c := newClient(t, Config{Endpoints: []string{ts.URL}, Clock: clk, MinRefill: 100, MaxBuffer: 1000, LowWater: 50, MaxAge: time.Hour})
	var once atomic.Bool
	kicked := make(chan bool, 1)
	c.afterPush = func() {
		if !once.CompareAndSwap(false, true) {
			return
		}
		for c.Stats().Buffered > 50 {
			if _, err := c.Next(context.Background()); err != nil {
				t.Error(err)
				break
			}
		}
		kicked <- len(c.kick) == 1
	}
	if _, err := c.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !<-kicked {
		t.Fatal("the buffer reached its low-water mark right after a refill, and no refill was asked for")
	}
}
