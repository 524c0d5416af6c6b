package dynamostore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// journalSeed is the seed of a randomised journal test: SNOWFENCE_JOURNAL_SEED
// to replay a run, else the clock.
func journalSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SNOWFENCE_JOURNAL_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SNOWFENCE_JOURNAL_SEED=%q: %v", v, err)
		}
	}
	t.Logf("seed %d (replay the choices with SNOWFENCE_JOURNAL_SEED=%d)", seed, seed)
	return seed
}

// held is one successful claim as its claimer saw it: what it may have
// issued is [StartMs, until).
type held struct {
	l        *lease.Lease
	until    int64 // the highest mark the store acknowledged, or the mark a release was asked to record
	released bool  // the release returned nil
}

// TestJournalInterleavings: workers, each on a Store value of its own —
// half of them behind a shim that drops replies after the write committed
// — claim, renew, release, abandon, quarantine, unquarantine and raise the
// marks of three numbers, on one logical clock, some sharing a holder name.
// Afterwards what any two claims of a number may have issued is disjoint
// (the fence), every number's intervals are disjoint (CheckIntervals), every
// claim that succeeded has exactly one entry and every entry is a claim
// that succeeded (or, behind drops, one that took effect unbeknown to its
// claimer and was ended by another write), and Who names, for the first and last timestamp each
// holder may have issued, that holder.
func TestJournalInterleavings(t *testing.T) {
	seed := journalSeed(t)
	base := newStore(t)
	table := base.Table()
	drops := newShim(t)
	drops.SetDropProbability(0.1, seed)
	const workers, ops, lo, hi = 6, 60, 0, 3
	start := baseMs()
	var clock, noFree atomic.Int64
	now := func(r *rand.Rand) int64 { return start + clock.Add(1+r.Int64N(40)) }
	var mu sync.Mutex
	var claims []*held
	dropHolders := map[string]bool{} // holders of workers behind drops
	var wg sync.WaitGroup
	for w := range workers {
		ep := shimEndpoint(t)
		if w%2 == 1 {
			ep = drops.URL()
		}
		st := connectAt(t, ep, table, dynamostore.Config{})
		holder := fmt.Sprintf("worker-%d", w)
		if w%3 == 0 {
			holder = "shared-holder"
		}
		if w%2 == 1 {
			dropHolders[holder] = true
		}
		r := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			var mine []*held
			drop := func(i int) { mine = append(mine[:i], mine[i+1:]...) }
			for range ops {
				ctx := ctxFor(t)
				p := r.IntN(100)
				switch {
				case p < 40 && len(mine) < 1:
					rq := req(holder, lo, hi, now(r))
					rq.LeaseFor, rq.MaxAhead = 300*time.Millisecond, 2*time.Second
					l, err := st.Claim(ctx, rq)
					if errors.Is(err, lease.ErrNoFreeNumber) {
						noFree.Add(1)
						continue
					}
					if err != nil {
						t.Errorf("claim: %v", err)
						continue
					}
					h := &held{l: l, until: l.MarkMs}
					mine = append(mine, h)
					mu.Lock()
					claims = append(claims, h)
					mu.Unlock()
				case p < 65 && len(mine) > 0:
					i := r.IntN(len(mine))
					h := mine[i]
					nl, err := st.Extend(ctx, h.l, now(r)+100+r.Int64N(300), 0)
					switch {
					case err == nil:
						h.l, h.until = nl, max(h.until, nl.MarkMs)
					case errors.Is(err, lease.ErrLost), errors.Is(err, lease.ErrQuarantined):
						drop(i)
					}
				case p < 75 && len(mine) > 0:
					i := r.IntN(len(mine))
					h := mine[i]
					at := h.l.StartMs + r.Int64N(h.l.MarkMs-h.l.StartMs+1)
					err := st.Release(ctx, h.l, at)
					// A release ends the holding whatever it returns: the
					// caller says it issued nothing at or after at (the
					// keeper withdraws its grant before it releases). A
					// release whose reply was lost may have committed and
					// still report ErrLost or ErrQuarantined (the SDK's
					// retry finds the number claimed or quarantined since),
					// so only a nil result says it is recorded as released.
					h.until, h.released = at, err == nil
					drop(i)
				case p < 80 && len(mine) > 0:
					drop(r.IntN(len(mine))) // abandoned: its lease lapses
				case p < 86:
					if err := st.Quarantine(ctx, lo+r.IntN(hi-lo+1)); err != nil {
						t.Logf("quarantine: %v", err)
					}
				case p < 94:
					if err := st.Unquarantine(ctx, lo+r.IntN(hi-lo+1)); err != nil && !errors.Is(err, lease.ErrNotHeld) {
						t.Logf("unquarantine: %v", err)
					}
				default:
					if _, err := st.RaiseMarks(ctx, lease.Range{Lo: lo, Hi: hi}, now(r)+r.Int64N(500)); err != nil {
						t.Logf("raise marks: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	dropped, _ := drops.Stats()
	t.Logf("%d claims succeeded, %d found no free number; %d replies dropped", len(claims), noFree.Load(), dropped)
	defer func() {
		if !t.Failed() {
			return
		}
		// What a failure needs to be read: every number's intervals and
		// what each claimer knew.
		for n := lo; n <= hi; n++ {
			for _, iv := range lease.Intervals(leasetest.MustHistory(t, base, n), leasetest.MustGet(t, base, n)) {
				t.Logf("machine %d: interval %+v", n, iv)
			}
			for _, h := range claims {
				if h.l.Machine == n {
					t.Logf("machine %d: claim token %d by %s may have issued %d–%d (released %v)", n, h.l.Token, h.l.Holder, h.l.StartMs, h.until, h.released)
				}
			}
		}
	}()
	for n := lo; n <= hi; n++ {
		ivs := leasetest.MustIntervals(t, base, n)
		seqs := map[string]bool{}
		for _, it := range journalItems(t, base, n) {
			seq := it["n"].(*types.AttributeValueMemberN).Value
			if seqs[seq] {
				t.Errorf("machine %d: journal table holds entry %s twice", n, seq)
			}
			seqs[seq] = true
		}
		if len(seqs) > lease.JournalRetention-1 {
			t.Errorf("machine %d: journal table holds %d entries, more than the retention", n, len(seqs))
		}
		var won []*held
		for _, h := range claims {
			if h.l.Machine == n {
				won = append(won, h)
			}
		}
		// The fence itself, whatever the journal says: what two claims of
		// one number may have issued never overlaps.
		for i, a := range won {
			for _, b := range won[i+1:] {
				if a.l.StartMs < b.until && b.l.StartMs < a.until {
					t.Errorf("machine %d: token %d (%s) may have issued %d–%d and token %d (%s) %d–%d: the fence let two holders overlap",
						n, a.l.Token, a.l.Holder, a.l.StartMs, a.until, b.l.Token, b.l.Holder, b.l.StartMs, b.until)
				}
			}
		}
		if len(won) > lease.JournalRetention {
			t.Fatalf("machine %d: %d claims, more than the journal keeps: lower ops", n, len(won))
		}
		for _, iv := range ivs {
			found := 0
			for _, h := range won {
				if h.l.Token == iv.Token && h.l.Claim == iv.Claim {
					found++
				}
			}
			switch {
			case found == 0 && dropHolders[iv.Holder] && iv.State != lease.StateHolding:
				// A claim whose reply was lost and which another write
				// ended (a raise, a quarantine, a takeover after its
				// lease ran out) before the SDK's retry read the item:
				// it took effect, and its claimer, not knowing, issued
				// nothing. Its interval is still disjoint from all.
				t.Logf("machine %d: entry of a claim whose claimer never learned it took effect: %+v", n, iv)
			case found != 1:
				t.Errorf("machine %d: entry %+v matches %d successful claims, want 1", n, iv.JournalEntry, found)
			}
		}
		for _, h := range won {
			var entries []lease.Interval
			for _, iv := range ivs {
				if iv.Token == h.l.Token && iv.Claim == h.l.Claim {
					entries = append(entries, iv)
				}
			}
			if len(entries) != 1 {
				t.Errorf("machine %d: claim %+v has %d journal entries, want 1", n, h.l, len(entries))
				continue
			}
			e := entries[0]
			if e.Holder != h.l.Holder || e.StartMs != h.l.StartMs {
				t.Errorf("machine %d: entry %+v, claim %+v", n, e.JournalEntry, h.l)
			}
			if h.released && e.End != lease.EndReleased && e.End != lease.EndQuarantined {
				t.Errorf("machine %d: released claim %+v ended %q", n, h.l, e.End)
			}
			if h.released && e.End == lease.EndReleased && e.EndMs < h.until {
				t.Errorf("machine %d: claim released at %d, entry ends at %d", n, h.until, e.EndMs)
			}
			if h.until <= h.l.StartMs {
				continue
			}
			for _, ms := range []int64{h.l.StartMs, (h.l.StartMs + h.until) / 2, h.until - 1} {
				if iv, err := lease.Who(ivs, ms); err != nil || iv.Token != h.l.Token || iv.Claim != h.l.Claim {
					t.Errorf("machine %d: Who(%d) = token %d, %v; want token %d (%s may have issued %d–%d)",
						n, ms, iv.Token, err, h.l.Token, h.l.Holder, h.l.StartMs, h.until)
				}
			}
		}
	}
}

// TestJournalDroppedReplies: replies lost after the write committed, with
// the SDK's retries (whose repeat fails its condition) and without them
// (the store re-reads): the adopted claim's entry is there once, and a
// release, a quarantine and a raise end it once, with their marks.
func TestJournalDroppedReplies(t *testing.T) {
	for _, attempts := range []int{0, 1} {
		t.Run(map[int]string{0: "SDK retry", 1: "re-read"}[attempts], func(t *testing.T) {
			s, sh := storeBehind(t, attempts)
			ctx := ctxFor(t)
			now := baseMs()
			const m = 4
			// A first claim records the table's identity (a write of its
			// own), so the reply dropped next is the claim's.
			leasetest.MustClaim(t, s, req("h", 3, 3, now))
			history := func(want int) []lease.JournalEntry {
				t.Helper()
				h := leasetest.MustHistory(t, s, m)
				if len(h) != want {
					t.Fatalf("History = %+v, want %d entries", h, want)
				}
				leasetest.MustIntervals(t, s, m)
				return h
			}
			retry := func(what string, f func() error) {
				t.Helper()
				sh.DropNextReplies(1)
				if err := f(); err != nil {
					if attempts == 0 {
						t.Fatalf("%s whose reply was lost: %v", what, err)
					}
					// Without retries the outcome is unknown, and the
					// operator runs it again, as the error says.
					if err := f(); err != nil {
						t.Fatalf("%s run again: %v", what, err)
					}
				}
			}

			sh.DropNextReplies(1)
			a := leasetest.MustClaim(t, s, req("a", m, m, now))
			if h := history(1); h[0].Token != a.Token || h[0].Claim != a.Claim || h[0].PrevMarkMs != 0 {
				t.Fatalf("entry of the adopted claim %+v, lease %+v", h[0], a)
			}
			a = mustExtend(t, s, a, now+20_000)
			sh.DropNextReplies(1)
			if err := s.Release(ctx, a, now+5_000); err != nil {
				t.Fatalf("release whose reply was lost: %v", err)
			}
			if h := history(1); h[0].End != lease.EndReleased || h[0].EndMs != now+5_000 {
				t.Fatalf("entry after the release %+v, want released at %d", h[0], now+5_000)
			}

			// The claim over a's entry archives it first: both the
			// archive's reply and the claim's are lost.
			droppedBefore, _ := sh.Stats()
			sh.DropNextReplies(2)
			b := leasetest.MustClaim(t, s, req("b", m, m, now+6_000))
			if dropped, _ := sh.Stats(); dropped != droppedBefore+2 {
				t.Fatalf("the shim dropped %d replies of the claim over an entry, want 2 (archive and claim)", dropped-droppedBefore)
			}
			if h := history(2); h[1].Token != b.Token || h[1].PrevMarkMs != now+5_000 || h[1].StartMs != b.StartMs ||
				h[0].End != lease.EndReleased || h[0].EndMs != now+5_000 {
				t.Fatalf("entries after the second claim %+v, lease %+v", h, b)
			}
			if items := journalItems(t, s, m); len(items) != 1 || attrS(items[0], "e") != lease.EndReleased {
				t.Fatalf("journal table after the archive whose reply was lost: %v, want a's entry once, released", items)
			}
			retry("quarantine", func() error { return s.Quarantine(ctx, m) })
			if h := history(2); h[1].End != lease.EndQuarantined || h[0].End != lease.EndReleased {
				t.Fatalf("entries after the quarantine %+v", h)
			}
			if err := s.Unquarantine(ctx, m); err != nil {
				t.Fatal(err)
			}

			sh.DropNextReplies(1) // the archive of b's (quarantined) entry
			c := leasetest.MustClaim(t, s, req("c", m, m, now+40_000))
			c = mustExtend(t, s, c, now+60_000)
			retry("raise marks", func() error { _, err := s.RaiseMarks(ctx, lease.Range{Lo: m, Hi: m}, now+120_000); return err })
			h := history(3)
			if h[2].Token != c.Token || h[2].End != lease.EndRaised || h[2].EndMs != c.MarkMs {
				t.Fatalf("entry of the raised holder %+v, want raised at its mark %d", h[2], c.MarkMs)
			}
			d := leasetest.MustClaim(t, s, req("d", m, m, now+100_000))
			if h := history(4); h[3].PrevMarkMs != now+120_000 || d.StartMs != now+120_000 {
				t.Fatalf("claim after the raise: entry %+v, lease %+v", h[3], d)
			}
		})
	}
}

// TestJournalItemSize fills a number's journal with holders of 256
// characters (66 claims) and reports the lease item's size, the write
// units a renewal consumes on it (DynamoDB bills an UpdateItem by the
// larger of the item before and after, per KB) and a consistent read's
// units, beside an item with one entry: the lease item keeps one entry
// whatever the journal's length, so they are the same. The journal table
// keeps the newest JournalRetention entries, jcur's included.
func TestJournalItemSize(t *testing.T) {
	s := newStore(t)
	ctx := ctxFor(t)
	now := baseMs()
	units := func(n int) (write, read float64) {
		t.Helper()
		key := map[string]types.AttributeValue{"machine_id": &types.AttributeValueMemberN{Value: strconv.Itoa(n)}}
		u, err := s.Client().UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.Table()), Key: key,
			UpdateExpression:       aws.String("SET lease_expiry = lease_expiry"),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if err != nil {
			t.Fatal(err)
		}
		g, err := s.Client().GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(s.Table()), Key: key, ConsistentRead: aws.Bool(true),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if err != nil || u.ConsumedCapacity == nil || g.ConsumedCapacity == nil {
			t.Fatalf("consumed capacity: %v, %+v, %+v", err, u.ConsumedCapacity, g.ConsumedCapacity)
		}
		return *u.ConsumedCapacity.CapacityUnits, *g.ConsumedCapacity.CapacityUnits
	}
	size := func(n int) int {
		t.Helper()
		g, err := s.Client().GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(s.Table()), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"machine_id": &types.AttributeValueMemberN{Value: strconv.Itoa(n)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return itemSize(g.Item)
	}
	one := leasetest.MustClaim(t, s, req(strings.Repeat("x", 256), 1, 1, now))
	leasetest.MustRelease(t, s, mustExtend(t, s, one, now+1000), now+1000)
	const claims = lease.JournalRetention + 2
	var last *lease.Lease
	for i := range claims {
		l := leasetest.MustClaim(t, s, req(fmt.Sprintf("%03d", i)+strings.Repeat("h", 253), 2, 2, now))
		leasetest.MustRelease(t, s, mustExtend(t, s, l, now+int64(i)+1), now+int64(i)+1)
		last = l
	}
	h := leasetest.MustHistory(t, s, 2)
	if len(h) != lease.JournalRetention || h[len(h)-1].Claim != last.Claim || h[0].Holder[:3] != fmt.Sprintf("%03d", claims-lease.JournalRetention) {
		t.Fatalf("History has %d entries, from %q to %q; want the newest %d", len(h), h[0].Holder[:3], h[len(h)-1].Holder[:3], lease.JournalRetention)
	}
	if items := journalItems(t, s, 2); len(items) != lease.JournalRetention-1 {
		t.Errorf("journal table holds %d entries of machine 2, want %d (the newest but jcur)", len(items), lease.JournalRetention-1)
	}
	w1, r1 := units(1)
	w64, r64 := units(2)
	s1, s64 := size(1), size(2)
	t.Logf("one entry: lease item %d B, renewal %.0f write units, consistent read %.1f read units", s1, w1, r1)
	t.Logf("%d claims, 256-byte holders: lease item %d B, renewal %.0f write units, consistent read %.1f read units",
		claims, s64, w64, r64)
	if s64 > s1+16 || w64 != w1 || r64 != r1 {
		t.Errorf("lease item after %d claims: %d B, %.0f write units, %.1f read units; want about one entry's (%d B, %.0f, %.1f)",
			claims, s64, w64, r64, s1, w1, r1)
	}
	if w64 != 1 {
		t.Errorf("a renewal of a number with a full journal costs %.0f write units, want 1", w64)
	}
}

// itemSize is an item's size as DynamoDB counts it: each attribute's name
// and value; a number about one byte per two significant digits plus one;
// a map 3 bytes plus one per element and its name and value.
func itemSize(m map[string]types.AttributeValue) int {
	n := 0
	for k, v := range m {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(strings.TrimLeft(v.Value, "-0"))+1)/2 + 1
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	default:
		return 1
	}
}
