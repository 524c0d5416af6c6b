package zkstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// TestSessionEndFreesNothing: a holder's session ends (closed here; a
// frozen process's expires) while its lease runs. The number stays held:
// another claimer gets ErrNoFreeNumber until its own clock passes the
// holder's mark, and then starts above it — a session is no lease.
func TestSessionEndFreesNothing(t *testing.T) {
	e := zktest.Start(t, 1)
	path := newPath(t)
	conn := dial(t, e)
	as, err := zkstore.New(conn, zkstore.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	nowMs := time.Now().UnixMilli()
	a := mustClaim(t, as, req("a", 0, 0, nowMs))
	if a, err = as.Extend(t.Context(), a, nowMs+20_000, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	conn.Close() // the session ends
	bs := open(t, e, path)
	if l, err := bs.Claim(t.Context(), req("b", 0, 0, nowMs+1)); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Fatalf("claim of A's number after A's session ended, before A's mark: %+v, %v; want ErrNoFreeNumber", l, err)
	}
	b := mustClaim(t, bs, req("b", 0, 0, a.MarkMs+1))
	if b.StartMs <= a.MarkMs || b.Token <= a.Token {
		t.Errorf("B's claim after A's mark: start %d token %d; want start > %d and token > %d", b.StartMs, b.Token, a.MarkMs, a.Token)
	}
}
