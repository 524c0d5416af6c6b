package client

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

// TestReviewRedirectNotFollowed: an endpoint that answers a mint with a
// 307 to another host must not make the client mint there. The Client's
// own http.Client follows redirects (the default CheckRedirect), and a 307
// keeps the method, so the POST is re-sent to the Location and the IDs of
// whatever answers there, a server that is not in Config.Endpoints and may
// mint in another ID space, are handed out as if the endpoint had issued
// them. A redirect should be a failed attempt, like any other non-200.
func TestReviewRedirectNotFollowed(t *testing.T) {
	elsewhere := newScripted(t, nil)
	elsewhere.next.Store(1 << 40) // another ID space
	elsewhere.script = []func(http.ResponseWriter, *http.Request){elsewhere.ok}
	endpoint := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.ts.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})
	c := newClient(t, Config{Endpoints: []string{endpoint.ts.URL}, MaxAttempts: 1, MinRefill: 4})
	id, err := c.Next(ctxT(t))
	if err == nil {
		t.Errorf("Next = %d from %s, which is not an endpoint (the endpoint answered 307 to it); want an error", id, elsewhere.ts.URL)
	}
	if n := elsewhere.count(); n != 0 {
		t.Errorf("the client sent %d mint requests to the redirect's target; want 0", n)
	}
}

// TestReviewNextNNoIDPastMaxAge: NextN takes what the buffer holds, then
// waits for a refill holding those IDs; when the refill is slow (a 503
// with Retry-After, backoff) the IDs it took age past MaxAge and are
// handed out anyway, although MaxAge promises "an ID is handed out only
// while less than MaxAge has passed since the request that fetched it was
// sent".
func TestReviewNextNNoIDPastMaxAge(t *testing.T) {
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

// TestReviewRepeatedIDsAcrossResponses: a server (or something between
// it and the client) that answers two 200s with the same IDs would make
// the client hand the same ID out twice. With Config.Schedule the client
// remembers the last ID received from each machine number, and refuses
// the repeat: the IDs of one machine number only increase.
func TestReviewRepeatedIDsAcrossResponses(t *testing.T) {
	var replay atomic.Int64
	s := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		replay.Store(0)
		writeBatch(w, &replay, countOf(r)) // 1..n every time
	})
	sched := snowfence.DefaultSchedule()
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}, MinRefill: 4, MaxBuffer: 4, LowWater: 1, MaxAttempts: 1, Schedule: &sched})
	ctx := ctxT(t)
	seen := map[snowfence.ID]bool{}
	for range 8 {
		id, err := c.Next(ctx)
		if errors.Is(err, ErrUnavailable) {
			if !errors.Is(err, ErrBadResponse) {
				t.Errorf("Next: %v; want the repeat refused as ErrBadResponse", err)
			}
			if st := c.Stats(); st.HandedOut != 4 || st.Failures == 0 {
				t.Errorf("Stats = %+v; want the 4 IDs of the first answer handed out and the repeat counted as a failure", st)
			}
			return // the repeat was refused
		}
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("ID %d handed out twice: the server repeated a batch and the client took it", id)
		}
		seen[id] = true
	}
	t.Errorf("Next gave %d IDs from a server that repeats 1..4 and no error; want the repeat refused", len(seen))
}

// TestRepeatedIDsTrustedWithoutSchedule: without Config.Schedule the
// client trusts the servers not to repeat IDs, as documented: a repeated
// answer is handed out again.
func TestRepeatedIDsTrustedWithoutSchedule(t *testing.T) {
	var replay atomic.Int64
	s := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		replay.Store(0)
		writeBatch(w, &replay, countOf(r))
	})
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}, MinRefill: 4, MaxBuffer: 4, LowWater: 1, MaxAttempts: 1})
	ctx := ctxT(t)
	var got []snowfence.ID
	for range 8 {
		id, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %v: %v; want no check without Config.Schedule", got, err)
		}
		got = append(got, id)
	}
	if got[0] != 1 || got[4] != 1 {
		t.Errorf("Next gave %v; want 1..4 twice (the server repeated them and nothing checks)", got)
	}
}

// TestReviewRedirectOwnHTTPClient: with Config.HTTPClient a client that
// follows redirects (the default), the IDs of the redirect's target are
// still not handed out.
func TestReviewRedirectOwnHTTPClient(t *testing.T) {
	elsewhere := newScripted(t, nil)
	elsewhere.next.Store(1 << 40)
	elsewhere.script = []func(http.ResponseWriter, *http.Request){elsewhere.ok}
	endpoint := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.ts.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(hc.CloseIdleConnections)
	c := newClient(t, Config{Endpoints: []string{endpoint.ts.URL}, HTTPClient: hc, MaxAttempts: 1, MinRefill: 4})
	id, err := c.Next(ctxT(t))
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrBadResponse) {
		t.Errorf("Next = %d, %v; want ErrUnavailable with ErrBadResponse (the answer came after a redirect)", id, err)
	}
}
