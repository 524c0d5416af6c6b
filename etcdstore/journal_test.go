package etcdstore_test

import (
	"errors"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// journalKeys counts the keys under machine n's journal prefix in region 0.
func journalKeys(t *testing.T, cli *clientv3.Client, prefix string, n int) int64 {
	t.Helper()
	resp, err := cli.Get(ctxFor(t), fmt.Sprintf("%s/journal/0/%d/", prefix, n), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("count journal keys: %v", err)
	}
	return resp.Count
}

// TestJournalClaimUnknownOutcome: a claim transaction whose reply is lost
// is decided from the store, and its journal entry with it (same
// transaction): adopted, the entry is there exactly once and is the
// lease's; not sent, there is none; sent but undecidable (the re-read
// fails too), the claim is undone by revoking its etcd lease and its entry
// — the one the test cannot see from the claimer — covers no timestamp,
// through a raise of the marks and the next claim.
func TestJournalClaimUnknownOutcome(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	for _, tc := range []struct {
		name  string
		fault fault
	}{
		{"reply lost", lostReply},
		{"never sent", neverSent},
		{"reply and re-read lost", dropNextReads},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli := c.Client(t)
			next := pass
			flaky := installFlaky(cli, func() fault { f := next; next = pass; return f })
			st := newStore(t, cli, etcdstore.Config{})
			const m = 3
			now := baseMs()
			first := leasetest.MustClaim(t, st, req("before", m, m, now))
			first = mustExtend(t, st, first, now+1000)
			leasetest.MustRelease(t, st, first, now+1000)

			flaky.mu.Lock()
			next = tc.fault
			flaky.mu.Unlock()
			r := req("unknown", m, m, now)
			l, err := st.Claim(ctxFor(t), r)
			h := leasetest.MustHistory(t, st, m)
			switch tc.fault {
			case lostReply:
				if err != nil {
					t.Fatalf("Claim after a lost reply = %v; want the committed claim adopted", err)
				}
				want := lease.JournalEntry{Machine: m, Token: l.Token, Claim: l.Claim, Holder: "unknown", ClaimedMs: now,
					PrevMarkMs: now + 1000, StartMs: l.StartMs}
				if len(h) != 2 || h[1] != want {
					t.Fatalf("History = %+v, want the first claim's entry then %+v", h, want)
				}
				if got := journalKeys(t, cli, prefixFor(t), m); got != 3 {
					t.Errorf("journal keys = %d, want 3 (the first entry, its end, the adopted claim's entry once)", got)
				}
				l = mustExtend(t, st, l, l.StartMs+500)
				leasetest.MustRelease(t, st, l, l.MarkMs)
			case neverSent:
				if !errors.Is(err, errUnknownOutcome) {
					t.Fatalf("Claim after a transaction never sent = %v, %v; want the injected error", l, err)
				}
				if len(h) != 1 {
					t.Fatalf("History = %+v, want only the first claim's entry", h)
				}
			case dropNextReads:
				if !errors.Is(err, errUnknownOutcome) {
					t.Fatalf("Claim after a transaction and its re-read lost = %v, %v; want the injected error", l, err)
				}
				if len(h) != 2 || h[1].Holder != "unknown" || h[1].End != lease.EndNone {
					t.Fatalf("History = %+v, want the first claim's entry and the undone claim's, not ended", h)
				}
				if rec := leasetest.MustGet(t, st, m); rec.Held() {
					t.Errorf("record after the undone claim = %+v, want not held (its etcd lease revoked)", rec)
				}
				if _, err := st.RaiseMarks(ctxFor(t), lease.Range{Lo: m, Hi: m}, now+5000); err != nil {
					t.Fatal(err)
				}
			}
			if flaky.claims < 2 || flaky.injected != 1 {
				t.Errorf("flaky KV saw %d claims and failed %d, want at least 2 and 1", flaky.claims, flaky.injected)
			}
			after := leasetest.MustClaim(t, st, req("after", m, m, now))
			ivs := leasetest.MustIntervals(t, st, m)
			for _, iv := range ivs {
				if iv.Holder == "unknown" && tc.fault == dropNextReads && iv.UntilMs > iv.FromMs {
					t.Errorf("interval of the undone claim = %+v, want empty (it issued nothing)", iv)
				}
			}
			if last := ivs[len(ivs)-1]; last.Token != after.Token || last.State != lease.StateHolding {
				t.Errorf("newest interval = %+v, want the last claim's, holding", last)
			}
		})
	}
}
