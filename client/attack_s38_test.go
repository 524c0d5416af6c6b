package client

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
)

// ATTACK (callers never wait for ever; pre-existing, not this session's
// diff): NextN(n) with MaxBuffer below n gathers its IDs over n/MaxBuffer
// refills, and drops them all each time the oldest reaches MaxAge. When
// those refills take longer than MaxAge (here 125 requests of 10 ms each
// against a MaxAge of 100 ms) it can never return: it spins, refilling and
// expiring, until its context ends — for ever with context.Background.
// Config accepts MaxBuffer 8 (it must only be at least MinRefill).
func TestAttackNextNLargerThanMaxBufferNeverReturns(t *testing.T) {
	clk := fakeclock.New(exampleTime)
	s := newScripted(t, nil)
	s.script[0] = func(w http.ResponseWriter, r *http.Request) {
		clk.Advance(10 * time.Millisecond) // the round trip
		s.ok(w, r)
	}
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}, Clock: clk, MinRefill: 8, MaxBuffer: 8, MaxAge: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.NextN(ctx, 1000)
	if err != nil {
		st := c.Stats()
		t.Fatalf("NextN(1000) with MaxBuffer 8: %v after %d requests (%d IDs expired in the caller's hands); "+
			"want IDs, or a refusal at New/NextN saying n is more than the buffer can gather within MaxAge", err, st.Requests, st.Expired)
	}
}
