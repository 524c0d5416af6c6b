package pgstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// journalSeed returns the seed of a randomised journal test: from
// SNOWFENCE_JOURNAL_SEED if set, else the clock; it is logged.
func journalSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SNOWFENCE_JOURNAL_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SNOWFENCE_JOURNAL_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (SNOWFENCE_JOURNAL_SEED=%d replays every goroutine's choices; the interleaving is the scheduler's)", seed, seed)
	return seed
}

// claimed is one successful claim of the interleaving test and what its
// holder may have issued: [lease.StartMs, issuedTo).
type claimed struct {
	region   int
	lease    *lease.Lease
	nowMs    int64
	issuedTo int64
	released bool // by its holder
}

// handQuarantine is the operator's quarantine of a row in psql, as the
// package documentation gives it.
func handQuarantine(t testing.TB, s *pgstore.Store, n int) error {
	_, err := s.Pool().Exec(t.Context(), `UPDATE `+pgx.Identifier{s.Table()}.Sanitize()+` SET holder = 'QUARANTINED',
	floor_ms = GREATEST(floor_ms, lease_expiry), lease_expiry = 4102444800000, lease_epoch = lease_epoch + 1
 WHERE region = $1 AND machine_id = $2 AND holder <> 'QUARANTINED'`, s.Region(), n)
	return err
}

// TestJournalInterleaving searches for an interleaving that makes a
// journal entry wrong, missing or duplicated, or two intervals overlap:
// five claimers on numbers 0–3 (four stores of region 0 and a sibling of
// region 1 on the same rows' numbers), each with a clock that may run up
// to 2.5 s fast, claim, renew, release at a random mark or let the lease
// lapse, while an operator raises marks, quarantines (by the store and by
// hand, with the runbook's UPDATE) and unquarantines. Afterwards, in both
// regions: every number's intervals are disjoint; its journal holds
// exactly the newest JournalRetention of the claims that succeeded, once
// each, in token order, with the claimer's holder, clock and start; and
// Who names, for every timestamp a holder may have issued — from its start
// up to the last mark it was granted, or the mark it released at — that
// claim, and every interval ends exactly where its holder's last mark was.
func TestJournalInterleaving(t *testing.T) {
	t.Parallel()
	seed := journalSeed(t)
	pool := testPool(t, 12)
	table := newTable(t, pool)
	op := quietStore(t, pool, table)
	const workers, ops, lo, hi = 5, 120, 0, 3
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli())
	leaseFor := 2 * time.Second

	results := make([][]*claimed, workers)
	done := make(chan struct{})
	var wg, opWG sync.WaitGroup
	for w := range workers {
		s := lease.Store(quietStore(t, pool, table))
		region := 0
		if w == workers-1 {
			var err error
			if s, err = op.Keyspace(1); err != nil {
				t.Fatal(err)
			}
			region = 1
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			holder := fmt.Sprintf("w%d", w)
			if w == 1 {
				holder = "w0" // a holder string shared by two claimers
			}
			var cur *claimed
			for range ops {
				now := clock.Add(rng.Int64N(300))
				if cur == nil {
					at := now
					if rng.IntN(5) == 0 {
						at += rng.Int64N(2500) // a fast clock
					}
					l, err := s.Claim(t.Context(), lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: lo, Hi: hi}, NowMs: at,
						LeaseFor: leaseFor, MaxAhead: time.Minute})
					switch {
					case errors.Is(err, lease.ErrNoFreeNumber):
					case err != nil:
						t.Errorf("%s: claim: %v", holder, err)
						return
					default:
						cur = &claimed{region: region, lease: l, nowMs: at, issuedTo: l.MarkMs}
						results[w] = append(results[w], cur)
					}
					continue
				}
				l := cur.lease
				switch p := rng.IntN(100); {
				case p < 60:
					nl, err := s.Extend(t.Context(), l, max(l.MarkMs, now)+500+rng.Int64N(2000), leaseFor)
					switch {
					case err == nil:
						cur.lease, cur.issuedTo = nl, max(cur.issuedTo, nl.MarkMs)
					case errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrQuarantined):
						cur = nil // it stops at its last mark
					default:
						t.Errorf("%s: extend %v: %v", holder, l, err)
						return
					}
				case p < 75:
					mark := l.StartMs + rng.Int64N(l.MarkMs-l.StartMs+1)
					err := s.Release(t.Context(), l, mark)
					switch {
					case err == nil:
						cur.issuedTo, cur.released = min(cur.issuedTo, mark), true
					case errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrQuarantined):
					default:
						t.Errorf("%s: release %v: %v", holder, l, err)
						return
					}
					cur = nil
				case p < 85:
					cur = nil // dies: its lease lapses
				}
			}
		}()
	}
	opWG.Add(1)
	go func() { // the operator, on region 0, until the claimers are done
		defer opWG.Done()
		rng := rand.New(rand.NewPCG(seed, 1000))
		for {
			select {
			case <-done:
				return
			default:
			}
			n := lo + rng.IntN(hi-lo+1)
			var err error
			switch p := rng.IntN(100); {
			case p < 8:
				_, err = op.RaiseMarks(t.Context(), lease.Range{Lo: n, Hi: min(hi, n+rng.IntN(2))}, clock.Load()+rng.Int64N(3000))
			case p < 14:
				err = op.Quarantine(t.Context(), n)
			case p < 18:
				err = handQuarantine(t, op, n)
			case p < 30:
				if err = op.Unquarantine(t.Context(), n); errors.Is(err, lease.ErrNotHeld) {
					err = nil
				}
			default:
				_, err = op.History(t.Context(), n)
			}
			if err != nil {
				t.Errorf("operator: %v", err)
				return
			}
		}
	}()
	wg.Wait()
	close(done)
	opWG.Wait()
	if t.Failed() {
		return
	}

	for region, st := range map[int]lease.Admin{0: op, 1: mustKeyspace(t, op, 1)} {
		for n := lo; n <= hi; n++ {
			var want []*claimed
			for _, rs := range results {
				for _, c := range rs {
					if c.region == region && c.lease.Machine == n {
						want = append(want, c)
					}
				}
			}
			slices.SortFunc(want, func(a, b *claimed) int { return int(a.lease.Token) - int(b.lease.Token) })
			checkJournalOf(t, st, region, n, want)
		}
	}
}

func mustKeyspace(t *testing.T, s *pgstore.Store, i int) lease.Admin {
	t.Helper()
	k, err := s.AdminKeyspace(i)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// checkJournalOf checks the journal of number n against the claims of it
// that succeeded, in token order.
func checkJournalOf(t *testing.T, st lease.Admin, region, n int, want []*claimed) {
	t.Helper()
	h, err := st.History(t.Context(), n)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get(t.Context(), n)
	if err != nil {
		t.Fatal(err)
	}
	ivs := lease.Intervals(h, rec)
	if err := lease.CheckIntervals(ivs); err != nil {
		t.Errorf("region %d number %d: %v", region, n, err)
	}
	for i := 1; i < len(want); i++ {
		if want[i].lease.Token <= want[i-1].lease.Token {
			t.Errorf("region %d number %d: claims %v and %v share a token", region, n, want[i-1].lease, want[i].lease)
		}
	}
	if len(want) > lease.JournalRetention {
		want = want[len(want)-lease.JournalRetention:]
	}
	if len(h) != len(want) {
		t.Errorf("region %d number %d: %d entries, want the %d newest successful claims", region, n, len(h), len(want))
	}
	for i := range min(len(h), len(want)) {
		e, c := h[i], want[i]
		l := c.lease
		if e.Claim != l.Claim || e.Token != l.Token || e.Holder != l.Holder || e.StartMs != l.StartMs || e.ClaimedMs != c.nowMs ||
			e.Machine != n || e.Region != region || e.PrevMarkMs > e.StartMs {
			t.Errorf("region %d number %d: entry %d = %+v, want the claim %v at %d", region, n, i, e, l, c.nowMs)
		}
		// Exact, not only covering: no raise of the marks ever lands
		// between two claims of a number unseen, so every interval ends
		// at the last mark its holder was granted or released at.
		if iv := ivs[i]; iv.FromMs != l.StartMs || iv.UntilMs != c.issuedTo || (c.released && iv.State != lease.EndReleased) {
			t.Errorf("region %d number %d: interval %d = %d–%d %s, want %d–%d (released %v)", region, n, i, iv.FromMs, iv.UntilMs, iv.State,
				l.StartMs, c.issuedTo, c.released)
		}
	}
	t.Logf("region %d number %d: %d claims journaled", region, n, len(h))
	for _, c := range want {
		l := c.lease
		if c.issuedTo <= l.StartMs {
			continue
		}
		for _, ms := range []int64{l.StartMs, (l.StartMs + c.issuedTo) / 2, c.issuedTo - 1} {
			iv, err := lease.Who(ivs, ms)
			if err != nil || iv.Claim != l.Claim {
				t.Errorf("region %d number %d: Who(%d) = %+v, %v; want claim %s (token %d, may have issued %d–%d)",
					region, n, ms, iv.JournalEntry, err, l.Claim, l.Token, l.StartMs, c.issuedTo)
			}
		}
	}
}
