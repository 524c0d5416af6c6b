package etcdstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

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

// TestJournalQuarantinedEntryNotStretchedByRaise: a raise of the marks does
// not stretch a quarantined holder's journal entry over the raise's gap, so
// Who never names it for a later holder's IDs. etcd's Quarantine ended the
// holder's journal entry as quarantined with no EndMs (it did not read
// the mark), and RaiseMarks ends only an entry no write ended yet. So an
// entry ended by a quarantine whose holder's owner key is gone (the holder
// died, which is why numbers get quarantined) was never given an exact end:
// lease.Intervals ran it to the record's mark — the raised one — or to the
// next claim's PrevMarkMs, which is the raised mark too. The quarantined
// holder is then named for the whole raise's gap.
//
// With a restore, as the runbook has it (snapshot while the number was
// quarantined; after the snapshot the number was unquarantined and B
// issued on it; restore; raise-marks above everything issued), Who named
// A for B's IDs before the fix: Who(an ID B minted) answered A (a wrong who
// answer; no duplicate; an adversarial review of the journal found it). The
// PostgreSQL store's quarantine keeps the mark in end_ms.
func TestJournalQuarantinedEntryNotStretchedByRaise(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	cli := c.Client(t)
	s := newStore(t, cli, etcdstore.Config{})
	const n = 3
	now := baseMs()
	a := leasetest.MustClaim(t, s, req("a", n, n, now))
	markA := now + 1000
	a = mustExtend(t, s, a, markA)
	if err := s.Quarantine(ctxFor(t), n); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Extend(ctxFor(t), a, markA+1000, 10*time.Second); !errors.Is(err, lease.ErrQuarantined) {
		t.Fatalf("A's renewal after the quarantine: %v, want ErrQuarantined (A stops at %d)", err, markA)
	}
	// A's process dies; its owner key goes with its etcd lease.
	if _, err := cli.Revoke(ctxFor(t), ownerLease(t, cli, prefixFor(t), n)); err != nil {
		t.Fatal(err)
	}
	snap := c.Snapshot(t)

	// The history the restore loses: unquarantined, B issues above A.
	if err := s.Unquarantine(ctxFor(t), n); err != nil {
		t.Fatal(err)
	}
	b := leasetest.MustClaim(t, s, req("b", n, n, now))
	markB := now + 4000
	b = mustExtend(t, s, b, markB)
	bID := b.StartMs + 500 // a timestamp B issued
	t.Logf("A issued [%d, %d); B issued [%d, %d)", a.StartMs, markA, b.StartMs, markB)

	c.Restore(t, snap, etcdtest.RestoreOptions{})
	s2 := newStore(t, c.Client(t), etcdstore.Config{})
	raised := now + 60_000 // the runbook: above everything issued
	if _, err := s2.RaiseMarks(ctxFor(t), lease.Range{Lo: n, Hi: n}, raised); err != nil {
		t.Fatal(err)
	}
	ivs := leasetest.MustIntervals(t, s2, n)
	t.Logf("intervals after the raise: %+v", ivs)
	for _, ms := range []int64{bID, markB, raised - 1} {
		if iv, err := lease.Who(ivs, ms); err == nil && iv.Token == a.Token {
			t.Errorf("Who(%d) = A (token %d, %s, %d–%d), but A stopped at %d (its renewal was refused by the quarantine); "+
				"B minted %d in the restored-away history", ms, iv.Token, iv.State, iv.FromMs, iv.UntilMs, markA, bID)
		}
	}
}
