package etcdstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// won is one claim that succeeded in the interleaving test, and what its
// holder may have issued: timestamps in [StartMs, issuedMs).
type won struct {
	l        *lease.Lease
	issuedMs int64
}

// TestJournalRandomInterleavings searches for an interleaving that makes a
// journal entry wrong, missing or duplicated, or two intervals overlap:
// workers, each with a Store and a client of its own (two of them sharing
// one holder name), claim, extend, release, let leases lapse, raise marks
// and quarantine numbers of a three-number range, in a seeded random
// order, and one in eight of their claim transactions fails with an error
// of unknown outcome (committed or not, its re-read lost or not). Then,
// for every number: the intervals are disjoint, every claim that succeeded
// has exactly one entry (its token, claim, holder and start), every entry
// that is no successful claim's covers no timestamp, and every timestamp a
// holder may have issued is answered by Who with that holder.
//
// SNOWFENCE_JOURNAL_SEED replays a seed; the seed is logged.
func TestJournalRandomInterleavings(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SNOWFENCE_JOURNAL_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SNOWFENCE_JOURNAL_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (SNOWFENCE_JOURNAL_SEED=%d replays the choices)", seed, seed)
	const workers, ops, lo, hi = 4, 50, 0, 2
	c := etcdtest.Start(t, 1)
	admin := c.Client(t)
	prefix := prefixFor(t)

	var mu sync.Mutex
	var wins []*won
	var wg sync.WaitGroup
	for w := range workers {
		cli := c.Client(t)
		frng := rand.New(rand.NewPCG(seed, uint64(100+w)))
		installFlaky(cli, func() fault {
			switch p := frng.IntN(24); {
			case p == 0:
				return lostReply
			case p == 1:
				return neverSent
			case p == 2:
				return dropNextReads
			}
			return pass
		})
		st := newStore(t, cli, etcdstore.Config{Prefix: prefix})
		holder := fmt.Sprintf("worker-%d", w)
		if w < 2 {
			holder = "shared-holder"
		}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			var cur *won
			quarantined := map[int]bool{}
			expected := func(what string, err error, allowed ...error) {
				for _, a := range allowed {
					if errors.Is(err, a) {
						return
					}
				}
				t.Errorf("worker %d: %s: %v", w, what, err)
			}
			for range ops {
				p := rng.IntN(100)
				now := time.Now().UnixMilli()
				switch {
				case p < 8:
					_, err := st.RaiseMarks(ctxFor(t), lease.Range{Lo: lo, Hi: hi}, now+int64(rng.IntN(3000)))
					if err != nil {
						t.Logf("worker %d: RaiseMarks: %v", w, err) // may give up under contention; running it again is the remedy
					}
				case p < 14:
					n := lo + rng.IntN(hi-lo+1)
					if quarantined[n] {
						if err := st.Unquarantine(ctxFor(t), n); err != nil {
							expected("Unquarantine", err, lease.ErrNotHeld)
						}
						delete(quarantined, n)
					} else if err := st.Quarantine(ctxFor(t), n); err != nil {
						t.Logf("worker %d: Quarantine: %v", w, err) // may give up under contention
					} else {
						quarantined[n] = true
					}
				case cur == nil:
					l, err := st.Claim(ctxFor(t), lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: lo, Hi: hi}, NowMs: now,
						LeaseFor: 10 * time.Second, MaxAhead: time.Hour})
					if err != nil {
						expected("Claim", err, lease.ErrNoFreeNumber, errUnknownOutcome)
						continue
					}
					cur = &won{l: l, issuedMs: l.MarkMs}
					mu.Lock()
					wins = append(wins, cur)
					mu.Unlock()
				case p < 60:
					l, err := st.Extend(ctxFor(t), cur.l, max(cur.l.MarkMs, now)+1+int64(rng.IntN(400)), 10*time.Second)
					if err != nil {
						expected("Extend", err, lease.ErrLost, lease.ErrQuarantined)
						if !errors.Is(err, lease.ErrQuarantined) || rng.IntN(2) == 0 {
							cur = nil
						}
						continue
					}
					cur.l = l
					mu.Lock()
					cur.issuedMs = l.MarkMs
					mu.Unlock()
				case p < 80:
					markMs := max(cur.l.StartMs, cur.l.MarkMs-int64(rng.IntN(50)))
					if err := st.Release(ctxFor(t), cur.l, markMs); err != nil {
						expected("Release", err, lease.ErrLost)
					} else {
						mu.Lock()
						cur.issuedMs = min(cur.issuedMs, markMs)
						mu.Unlock()
					}
					cur = nil
				default: // its lease lapses
					id, err := strconv.ParseInt(cur.l.Claim, 16, 64)
					if err != nil {
						t.Errorf("worker %d: claim %q is not an etcd lease ID: %v", w, cur.l.Claim, err)
					} else if _, err := admin.Revoke(ctxFor(t), clientv3.LeaseID(id)); err != nil {
						t.Errorf("worker %d: Revoke: %v", w, err)
					}
					cur = nil
				}
			}
		})
	}
	wg.Wait()

	st := newStore(t, admin, etcdstore.Config{Prefix: prefix})
	byNum := map[int]map[uint64]*won{}
	for _, wn := range wins {
		if byNum[wn.l.Machine] == nil {
			byNum[wn.l.Machine] = map[uint64]*won{}
		}
		byNum[wn.l.Machine][wn.l.Token] = wn
	}
	claims := 0
	for n := lo; n <= hi; n++ {
		h := leasetest.MustHistory(t, st, n)
		ivs := lease.Intervals(h, leasetest.MustGet(t, st, n))
		if err := lease.CheckIntervals(ivs); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
		if len(h) > lease.JournalRetention {
			t.Errorf("machine %d: %d entries, want at most %d", n, len(h), lease.JournalRetention)
		}
		seen := map[uint64]bool{}
		for _, iv := range ivs {
			wn := byNum[n][iv.Token]
			switch {
			case seen[iv.Token]:
				t.Errorf("seed %d: machine %d: token %d has two entries", seed, n, iv.Token)
			case wn == nil:
				if iv.UntilMs > iv.FromMs {
					t.Errorf("seed %d: machine %d: entry %+v is no successful claim's, yet covers %d–%d", seed, n, iv.JournalEntry, iv.FromMs, iv.UntilMs)
				}
			case iv.Claim != wn.l.Claim || iv.Holder != wn.l.Holder || iv.StartMs != wn.l.StartMs:
				t.Errorf("seed %d: machine %d: entry %+v, want the claim %+v", seed, n, iv.JournalEntry, wn.l)
			}
			seen[iv.Token] = true
		}
		oldest := uint64(0)
		if len(h) == lease.JournalRetention {
			oldest = h[0].Token
		}
		for tok, wn := range byNum[n] {
			claims++
			if tok < oldest {
				continue // dropped by retention
			}
			if !seen[tok] {
				t.Errorf("seed %d: machine %d: claim %+v succeeded but has no journal entry", seed, n, wn.l)
				continue
			}
			for _, ms := range []int64{wn.l.StartMs, wn.issuedMs - 1} {
				if ms < wn.l.StartMs || ms >= wn.issuedMs {
					continue
				}
				if iv, err := lease.Who(ivs, ms); err != nil || iv.Token != tok {
					t.Errorf("seed %d: machine %d: Who(%d) = token %d, %v; want token %d, which may have issued it", seed, n, ms, iv.Token, err, tok)
				}
			}
		}
	}
	t.Logf("%d claims succeeded", claims)
	if claims < workers {
		t.Errorf("only %d claims succeeded: the test searched too little", claims)
	}
}
