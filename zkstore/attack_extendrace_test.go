package zkstore

// Attack: a data race in Extend (and Release) on a write of unknown
// outcome. The closure given to call reads z.stat.version — the version
// of the read the write was planned on — when call's goroutine runs it;
// once the caller's context ends, call returns, and the re-read that
// decides the outcome assigns the same variable z (`z, rerr :=
// s.reread(...)` reuses the loop's z: extend.go, release.go). The Set
// that may still be sent is then conditioned on whichever version the
// goroutine happens to read: if it runs after the re-read, on the version
// the re-read found — with the data planned on the first read, over a
// record it never checked (another holder's, after a takeover the re-read
// reported as lease.ErrLost). Under -race (how the suite runs) every
// abandoned renewal fails the test.

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
)

func TestAttackAbandonedRenewalRace(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 1)
	a, pc, let := parkedStore(t, e, attackPath("race"))
	ctx := t.Context()
	now := time.Now().UnixMilli()
	la, err := a.Claim(ctx, lease.ClaimRequest{Holder: "a", Range: lease.Range{Lo: 1, Hi: 1}, NowMs: now,
		LeaseFor: 10 * time.Second, MaxAhead: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// The renewal's write is slow (a reconnecting session): its call is
	// abandoned when the context ends, and the store re-reads.
	abandonUnknown(t, pc, 500*time.Millisecond, "renewal with its write abandoned", func(ctx context.Context) error {
		_, err := a.Extend(ctx, la, now+10_000, 10*time.Second)
		return err
	})
	let()
	select {
	case err = <-pc.done:
		t.Logf("the abandoned write went out: %v", err)
	case <-time.After(zktest.ReadyTimeout):
		t.Fatal("the abandoned write never went out")
	}
}
