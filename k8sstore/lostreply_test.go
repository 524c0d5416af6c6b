package k8sstore_test

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/snowfence/snowfence/internal/testkit/k8stest"
	"github.com/snowfence/snowfence/k8sstore"
)

// TestClaimAdoptsItsLostReply: a claim whose write committed while its
// reply was lost — the first claim's Create, and a claim's patch of an
// expired record — is adopted by the re-read, which finds the attempt's
// own nonce in the record, and the lease renews. (leasetest's
// CloneUnknownOutcome does the same for a renewal.)
func TestClaimAdoptsItsLostReply(t *testing.T) {
	srv := k8stest.Shared(t)
	ns := srv.Namespace(t)
	l := &loser{creates: true}
	rc := rest.CopyConfig(srv.Config())
	rc.Wrap(l.wrap)
	prefix := newPrefix()
	s := open(t, rc, k8sstore.Config{Namespace: ns, Prefix: prefix})
	now := time.Now().UnixMilli()
	// The origin is made first, without losing anything: the lost reply is
	// the number's own Create.
	mustClaim(t, s, on("setup", 9, now))
	for _, c := range []struct {
		name  string
		nowMs int64
	}{{"first claim (a Create)", now}, {"claim of an expired record (a patch)", now + 20_000}} {
		l.armed.Store(true)
		le, err := s.Claim(t.Context(), on("a", 1, c.nowMs))
		if err != nil {
			t.Fatalf("%s whose reply was lost: %v, want it adopted", c.name, err)
		}
		if l.armed.Load() {
			t.Fatalf("%s: no reply was lost", c.name)
		}
		rec, err := s.Get(t.Context(), 1)
		if err != nil || rec.Claim != le.Claim || rec.Holder != "a" {
			t.Fatalf("%s: record %+v (%v), want the adopted claim %s", c.name, rec, err, le.Claim)
		}
		le = mustExtend(t, s, le, c.nowMs+11_000)
		t.Logf("%s: adopted, epoch %d, renewed to %d", c.name, le.Token, le.MarkMs)
	}
	// A store that saw none of it agrees.
	other := open(t, srv.Config(), k8sstore.Config{Namespace: ns, Prefix: prefix})
	if rec, err := other.Get(t.Context(), 1); err != nil || rec.Holder != "a" {
		t.Fatalf("another store reads %+v (%v)", rec, err)
	}
}
