package dynamostore_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/internal/testkit/dynashim"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// storeBehind returns a store on a table of its own behind a shim of its
// own, with the SDK making at most attempts tries (0: its default, 3).
func storeBehind(t *testing.T, attempts int) (*dynamostore.Store, *dynashim.Shim) {
	t.Helper()
	sh := newShim(t)
	s, err := dynamostore.Connect(ctxFor(t), dynamostore.ClientConfig{
		Endpoint: sh.URL(), AWSRegion: "us-east-1", AccessKeyID: "test", SecretAccessKey: "test", RetryMaxAttempts: attempts,
	}, dynamostore.Config{Table: tableFor(t), RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CreateTable(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	return s, sh
}

// TestDroppedRenewalAndReleaseReplies: the reply to an extension or a
// release that committed is lost. With the SDK's retries (whose repeat
// fails its condition, the item returned showing the write done) and
// without them (the store re-reads), the caller is told it succeeded.
func TestDroppedRenewalAndReleaseReplies(t *testing.T) {
	for _, attempts := range []int{0, 1} {
		t.Run(map[int]string{0: "SDK retry", 1: "re-read"}[attempts], func(t *testing.T) {
			s, sh := storeBehind(t, attempts)
			now := baseMs()
			l := leasetest.MustClaim(t, s, req("h", 2, 2, now))
			sh.DropNextReplies(1)
			l = mustExtend(t, s, l, now+30_000)
			if l.MarkMs != now+30_000 {
				t.Fatalf("extension whose reply was lost: mark %d, want %d", l.MarkMs, now+30_000)
			}
			sh.DropNextReplies(1)
			if err := s.Release(ctxFor(t), l, now+5_000); err != nil {
				t.Fatalf("release whose reply was lost: %v", err)
			}
			if rec := leasetest.MustGet(t, s, 2); rec.Held() || rec.MarkMs != now+5_000 {
				t.Fatalf("record after the release %+v", rec)
			}
			if dropped, _ := sh.Stats(); dropped != 2 {
				t.Fatalf("shim dropped %d replies, want 2", dropped)
			}
		})
	}
}
