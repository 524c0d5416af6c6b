package client

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/publicid"
	"github.com/snowfence/snowfence/server"
)

// testKeys is the keyset of the servers here. Test key only.
func testKeys(t *testing.T) *publicid.Keyset {
	t.Helper()
	ks, err := publicid.ParseKeyset([]byte(`{"keys": {"1": {"status": "primary", "key": "8d2b4f6a1c0e3957b8a6d4c2e0f19b7a"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// TestMintPublicIDs: MintPublicIDs gets fresh IDs, strictly increasing
// across calls and never from the buffer, each with a public ID that opens
// to it; past a dead endpoint too. A type the server refuses is not
// retried; a count out of range is refused without a request.
func TestMintPublicIDs(t *testing.T) {
	ks := testKeys(t)
	ts := realServerWith(t, true, func(c *server.Config) { c.PublicIDKeys = ks })
	c := newClient(t, Config{Endpoints: []string{deadURL(t), ts.URL}, BaseBackoff: time.Microsecond, MaxBackoff: time.Microsecond})
	ctx := ctxT(t)
	var last snowfence.ID
	for _, tc := range []struct {
		prefix string
		n      int
	}{{"order", 1}, {"user_account", 1000}, {"a", 3}} {
		got, err := c.MintPublicIDs(ctx, tc.prefix, tc.n)
		if err != nil || len(got) != tc.n {
			t.Fatalf("MintPublicIDs(%s, %d) = %d, %v", tc.prefix, tc.n, len(got), err)
		}
		for _, p := range got {
			if p.ID <= last {
				t.Fatalf("%s: ID %d after %d", tc.prefix, p.ID, last)
			}
			last = p.ID
			o, err := ks.Open(p.Public)
			if err != nil || o.ID != p.ID || o.Prefix != tc.prefix {
				t.Fatalf("%s opens to %+v (%v), want %d of type %s", p.Public, o, err, p.ID, tc.prefix)
			}
		}
	}
	if st := c.Stats(); st.Received != 0 {
		t.Errorf("stats %+v: MintPublicIDs filled the buffer", st)
	}
	_, err := c.MintPublicIDs(ctx, "Order", 1)
	var se *ServerError
	if !errors.Is(err, ErrRejected) || !errors.As(err, &se) || se.Code != server.CodeInvalidType {
		t.Errorf("type Order: %v; want ErrRejected invalid_type", err)
	}
	for _, n := range []int{0, 1001} {
		if _, err := c.MintPublicIDs(ctx, "order", n); !errors.Is(err, snowfence.ErrInvalidCount) {
			t.Errorf("n = %d: %v, want ErrInvalidCount", n, err)
		}
	}
	c.Close()
	if _, err := c.MintPublicIDs(ctx, "order", 1); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// TestMintPublicIDsRetries: a 429 is retried after its Retry-After; an
// answer that is not exactly what was asked for yields nothing and is
// retried.
func TestMintPublicIDsRetries(t *testing.T) {
	answer := func(body string) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}
	}
	good := `{"ids":["5","6"],"public_ids":["order_2` + strings.Repeat("0", 26) + `","order_2` + strings.Repeat("1", 26) + `"]}`
	s := newScripted(t,
		func(w http.ResponseWriter, r *http.Request) { writeError(w, 429, "1", "rate_limited") },
		answer(`{"ids":["5"],"public_ids":["order_2`+strings.Repeat("0", 26)+`"]}`),                                          // one, not two
		answer(`{"ids":["6","5"],"public_ids":["order_2`+strings.Repeat("0", 26)+`","order_2`+strings.Repeat("1", 26)+`"]}`), // out of order
		answer(`{"ids":["5","6"],"public_ids":["user_2`+strings.Repeat("0", 26)+`","order_2`+strings.Repeat("1", 26)+`"]}`),  // another type
		answer(good+`{}`), // trailing data
		answer(good))
	clk := fakeclock.New(exampleTime)
	clk.AutoAdvance(true)
	c := newClient(t, Config{Endpoints: []string{s.ts.URL}, Clock: clk, FailureThreshold: 100, MaxAttempts: 10})
	got, err := c.MintPublicIDs(ctxT(t), "order", 2)
	if err != nil || len(got) != 2 || got[0].ID != 5 || got[1].Public != "order_2"+strings.Repeat("1", 26) {
		t.Fatalf("MintPublicIDs = %v, %v", got, err)
	}
	if n := s.count(); n != 6 {
		t.Errorf("%d requests, want 6 (a 429 and four bad answers retried)", n)
	}
	if st := c.Stats(); st.Failures != 5 {
		t.Errorf("stats %+v: want 5 failures", st)
	}
}
