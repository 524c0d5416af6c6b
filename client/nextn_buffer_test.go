package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

// TestNextNMoreThanMaxBufferRefused: NextN(n) with n above MaxBuffer is
// refused at once (ErrInvalidCount), sending nothing. It used to gather its
// IDs over n/MaxBuffer refills and drop them all each time the oldest
// reached MaxAge; when those refills took longer than MaxAge (here 125
// requests of 10 ms each against a MaxAge of 100 ms) it never returned,
// refilling and expiring until its context ended (an attack on the client
// found it: 11,483 requests in 2 s). NextN of MaxBuffer IDs still works.
func TestNextNMoreThanMaxBufferRefused(t *testing.T) {
	clk := fakeclock.New(exampleTime)
	s := newScripted(t, nil)
	s.script[0] = func(w http.ResponseWriter, r *http.Request) {
		clk.Advance(10 * time.Millisecond) // the round trip
		s.ok(w, r)
	}
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}, Clock: clk, MinRefill: 8, MaxBuffer: 8, MaxAge: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if ids, err := c.NextN(ctx, 1000); !errors.Is(err, snowfence.ErrInvalidCount) || len(ids) != 0 {
		st := c.Stats()
		t.Fatalf("NextN(1000) with MaxBuffer 8: %d IDs, %v after %d requests (%d IDs expired in the caller's hands); want ErrInvalidCount at once", len(ids), err, st.Requests, st.Expired)
	}
	if st := c.Stats(); st.Requests+st.Failures != 0 {
		t.Errorf("a refused NextN sent %d requests; want none", st.Requests+st.Failures)
	}
	if ids, err := c.NextN(ctx, 8); err != nil || len(ids) != 8 {
		t.Errorf("NextN(8) with MaxBuffer 8: %d IDs, %v; want 8", len(ids), err)
	}
}
