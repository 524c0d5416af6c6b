package zkstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/zkstore"
)

// TestJournalLostReplies: the journal is written in the same multi-op as
// the write it records, so a write whose reply is lost — a claim, a
// release, a quarantine, a raise of the marks, each decided by a re-read
// of its nonce — leaves exactly the entries and ends it would have left
// with its reply: one entry per claim, each ended once, the intervals
// disjoint.
func TestJournalLostReplies(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 1)
	st, lose, err := zkstore.NewLossy(dial(t, e), zkstore.Config{Path: newPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := t.Context()
	const m = 4
	nowMs := time.Now().UnixMilli()
	// The znodes made once (the path, the origin, the schedule and
	// registry znodes, the journal's parents) are made first, so that the
	// reply lost is each time the one of the write under test.
	mustClaim(t, st, req("first", 0, 0, nowMs))
	if _, err := dial(t, e).Create(st.Path()+"/journal/0/4", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	lose()
	a := mustClaim(t, st, req("a", m, m, nowMs))
	a = leasetest.MustExtend(t, st, a, nowMs+20_000, 10*time.Second)
	lose()
	if err := st.Release(ctx, a, nowMs+15_000); err != nil {
		t.Fatalf("release whose reply was lost: %v", err)
	}
	lose()
	b := mustClaim(t, st, req("b", m, m, nowMs))
	b = leasetest.MustExtend(t, st, b, nowMs+30_000, 10*time.Second)
	lose()
	if err := st.Quarantine(ctx, m); err != nil {
		t.Fatalf("quarantine whose reply was lost: %v", err)
	}
	if err := st.Unquarantine(ctx, m); err != nil {
		t.Fatal(err)
	}
	c := mustClaim(t, st, req("c", m, m, nowMs))
	lose()
	if n, err := st.RaiseMarks(ctx, lease.Range{Lo: m, Hi: m}, nowMs+90_000); err != nil || n != 1 {
		t.Fatalf("RaiseMarks whose reply was lost = %d, %v; want 1, nil", n, err)
	}

	h := leasetest.MustHistory(t, st, m)
	want := []struct {
		l      *lease.Lease
		end    string
		endMs  int64
		holder string
	}{
		{a, lease.EndReleased, nowMs + 15_000, "a"},
		{b, lease.EndQuarantined, b.MarkMs, "b"},
		{c, lease.EndRaised, c.MarkMs, "c"},
	}
	if len(h) != len(want) {
		t.Fatalf("History = %+v; want %d entries", h, len(want))
	}
	for i, w := range want {
		if g := h[i]; g.Token != w.l.Token || g.Claim != w.l.Claim || g.Holder != w.holder || g.End != w.end || g.EndMs != w.endMs ||
			g.StartMs != w.l.StartMs || g.EndedMs == 0 {
			t.Errorf("entry %d = %+v; want %s's claim (token %d), ended %q at %d", i, g, w.holder, w.l.Token, w.end, w.endMs)
		}
	}
	leasetest.MustIntervals(t, st, m)
}

// TestJournalKeyspaces: each keyspace has a journal of its own: the same
// number claimed through the store and through a sibling on another
// keyspace has one entry in each, naming its keyspace.
func TestJournalKeyspaces(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 1)
	st := open(t, e, newPath(t))
	sib, err := st.AdminKeyspace(lease.KeyspaceStride + 3)
	if err != nil {
		t.Fatal(err)
	}
	defer sib.Close()
	nowMs := time.Now().UnixMilli()
	a := mustClaim(t, st, req("a", 5, 5, nowMs))
	b := mustClaim(t, sib, req("b", 5, 5, nowMs))
	for _, c := range []struct {
		st     lease.Admin
		l      *lease.Lease
		region int
	}{{st, a, 0}, {sib, b, lease.KeyspaceStride + 3}} {
		h := leasetest.MustHistory(t, c.st, 5)
		if len(h) != 1 || h[0].Token != c.l.Token || h[0].Claim != c.l.Claim || h[0].Region != c.region {
			t.Errorf("History(5) of keyspace %d = %+v; want the one claim %s of that keyspace", c.region, h, c.l.Claim)
		}
	}
}

// TestJournalEntryGone: an entry deleted by hand (or never written, for a
// record older than the journal) stops nothing: the holder's release
// succeeds with no entry to end, and the next claim numbers its entry one
// past the highest left, never over one that exists.
func TestJournalEntryGone(t *testing.T) {
	t.Parallel() // its own servers: independent of every other test
	e := zktest.Start(t, 1)
	path := newPath(t)
	st := open(t, e, path)
	c := dial(t, e)
	nowMs := time.Now().UnixMilli()
	const m = 2
	dir := fmt.Sprintf("%s/journal/0/%d", path, m)
	for i := range 3 {
		l := mustClaim(t, st, req(fmt.Sprint("h", i), m, m, nowMs))
		if i == 2 {
			if err := c.Delete(dir+"/0000000003", -1); err != nil {
				t.Fatal(err)
			}
			if err := st.Release(t.Context(), l, l.StartMs); err != nil {
				t.Fatalf("release whose journal entry is gone: %v", err)
			}
			continue
		}
		leasetest.MustRelease(t, st, l, l.StartMs)
	}
	if err := c.Delete(dir+"/0000000001", -1); err != nil {
		t.Fatal(err)
	}
	l := mustClaim(t, st, req("after", m, m, nowMs))
	h := leasetest.MustHistory(t, st, m)
	if len(h) != 2 || h[1].Claim != l.Claim || h[0].End != lease.EndReleased {
		t.Fatalf("History = %+v; want the second claim's entry (released) and the new one's", h)
	}
	if _, _, err := c.Get(dir + "/0000000003"); err != nil {
		t.Errorf("the new claim's entry is not 0000000003, one past the highest left: %v", err)
	}
	if _, _, err := c.Get(dir + "/0000000004"); !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("an entry 0000000004 exists (%v); want the new claim's at 0000000003", err)
	}
}
