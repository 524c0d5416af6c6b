package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
)

// chaosServer answers mint requests at random: a full 200 (whose IDs it
// records), a 503, a 429, a connection dropped in the middle of a 200's
// body, a late answer (longer than the client's timeout, or not), or a
// malformed 200. IDs come from one counter shared by every chaosServer, so
// the IDs of the 200s are increasing in the order the client's requests
// were answered.
type chaosServer struct {
	ts   *httptest.Server
	next *atomic.Int64
	mu   sync.Mutex
	sent map[int64]bool // IDs in 200s written in full
	bad  map[int64]bool // IDs in malformed 200s and cut-off bodies
	late time.Duration
}

func newChaosServer(t *testing.T, next *atomic.Int64, late time.Duration) *chaosServer {
	s := &chaosServer{next: next, sent: map[int64]bool{}, bad: map[int64]bool{}, late: late}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.ts.Close)
	return s
}

func (s *chaosServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		if rand.N(4) == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	n := countOf(r)
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = s.next.Add(1)
	}
	body := appendBatchBody(nil, ids)
	record := func(m map[int64]bool) {
		s.mu.Lock()
		for _, id := range ids {
			m[id] = true
		}
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	switch p := rand.N(100); {
	case p < 10:
		writeError(w, http.StatusServiceUnavailable, "1", "fenced")
	case p < 18:
		writeError(w, http.StatusTooManyRequests, "1", "rate_limited")
	case p < 26:
		// Cut off in the body: the client must take none of it.
		record(s.bad)
		w.Header().Set("Content-Length", itoa(len(body)))
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case p < 31:
		// Late: past the client's timeout, so lost, or just slow. A
		// lost answer's IDs count as bad; if the client does read it,
		// it would be handed out, which the test then reports.
		record(s.bad)
		select {
		case <-time.After(s.late):
		case <-r.Context().Done():
			return
		}
		w.Write(body)
	case p < 36:
		// Malformed: out of order.
		if n > 1 {
			ids[0], ids[1] = ids[1], ids[0]
		} else {
			ids[0] = 0
		}
		record(s.bad)
		w.Write(appendBatchBody(nil, ids))
	case p < 40:
		// Slow but in time.
		time.Sleep(time.Duration(rand.N(2000)) * time.Microsecond)
		fallthrough
	default:
		if _, err := w.Write(body); err == nil {
			record(s.sent)
		}
	}
}

func itoa(n int) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// TestNeverTwiceNeverInvented: many goroutines take IDs through two chaotic
// servers; every ID handed out was sent in a 200 the server wrote in full,
// none is handed out twice, and each goroutine's IDs increase.
func TestNeverTwiceNeverInvented(t *testing.T) {
	var next atomic.Int64
	late := 30 * time.Millisecond
	a, b := newChaosServer(t, &next, late), newChaosServer(t, &next, late)
	c, err := New(Config{
		Endpoints:      []string{a.ts.URL, b.ts.URL},
		RequestTimeout: 20 * time.Millisecond,
		MaxAge:         10 * time.Millisecond,
		MinRefill:      3,
		MaxBuffer:      3000,
		MaxAttempts:    50,
		BaseBackoff:    10 * time.Microsecond,
		MaxBackoff:     200 * time.Microsecond,
		MaxRetryAfter:  100 * time.Microsecond,
		ProbeInterval:  time.Millisecond,
		RecoveryProbes: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	const workers = 8
	calls := 600
	if testing.Short() {
		calls = 150
	}
	got := make([][]snowfence.ID, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				if rand.N(50) == 0 {
					// An idle caller, so that buffered IDs expire.
					time.Sleep(time.Duration(rand.N(15)) * time.Millisecond)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+rand.N(20))*time.Millisecond)
				var ids []snowfence.ID
				var err error
				if i%2 == 0 {
					var id snowfence.ID
					if id, err = c.Next(ctx); err == nil {
						ids = []snowfence.ID{id}
					}
				} else {
					ids, err = c.NextN(ctx, 1+rand.N(60))
				}
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrUnavailable) {
					errs[w] = err
					return
				}
				got[w] = append(got[w], ids...)
			}
		})
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for w, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
	}
	sent := map[int64]bool{}
	for _, s := range []*chaosServer{a, b} {
		s.mu.Lock()
		for id := range s.sent {
			sent[id] = true
		}
		s.mu.Unlock()
	}
	seen := map[snowfence.ID]int{}
	total := 0
	for w, ids := range got {
		for i, id := range ids {
			if !sent[int64(id)] {
				t.Fatalf("worker %d got ID %d, which no server sent in a full 200", w, id)
			}
			if prev, dup := seen[id]; dup {
				t.Fatalf("ID %d handed out twice (workers %d and %d)", id, prev, w)
			}
			seen[id] = w
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("worker %d got %d after %d: not increasing", w, id, ids[i-1])
			}
		}
		total += len(ids)
	}
	st := c.Stats()
	if uint64(total) != st.HandedOut || st.Received != st.HandedOut+st.Expired+st.Discarded || st.Buffered != 0 {
		t.Errorf("stats %+v, %d IDs got: want handed out = got, received = handed out + expired + discarded", st, total)
	}
	// Expiry is exercised here when the idle callers line up (usually),
	// and always by TestMaxAgeFromSend.
	if total == 0 || st.Failures == 0 {
		t.Errorf("%d IDs, %d failures, %d expired: the test did not exercise the client", total, st.Failures, st.Expired)
	}
	t.Logf("%d IDs handed out, stats %+v", total, st)
}
