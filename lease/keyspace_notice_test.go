package lease_test

import (
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// raisedNotice is a fleet's wrapper of its store that declares a longer
// notice window than the store's constant, for a fleet that wants a
// self-fence longer than the store allows (to ride out a longer store
// outage): every holder of the fleet uses it, so every claim would wait
// the longer window. It implements nothing else: Keyspace is the wrapped
// store's.
type raisedNotice struct{ lease.Store }

const raisedNoticeWindow = 24 * time.Second

func (raisedNotice) MaxNoticeWindow() time.Duration { return raisedNoticeWindow }

// TestKeyspaceClaimWaitsTheWrappersNoticeWindow: a claim in a later layout's
// keyspace waits the notice window of the store the keeper was given (a
// fleet's wrapper declaring a longer one), not the window of the store
// underneath. The keeper checks its own notice window against
// KeeperConfig.Store's MaxNoticeWindow (checkNotice), but each hold's claim
// waits the MaxNoticeWindow of the store it claims in (noticeFloorMs: h.store)
// — for every layout step but step 0 that is Store.Keyspace(…), which a
// wrapper that embeds the store forwards to the store underneath: etcd's 8 s,
// not the 24 s the fleet's wrapper declares and the keeper admitted a 20 s
// self-fence against. So on a fleet past a v1→v2 cutover (every holder's v2
// number lives in keyspace 65536), A with a 20 s self-fence (LeaseFor 30 s),
// cut off when etcd is restored to before its claim, issues for up to 20 s; B,
// started after the restore with the same wrapper and timings, claims A's
// number and issues from its claim + 8 s. Two copies of one check that
// disagreed (an adversarial review found it). Entry point: lease.StartKeeper
// (and snowfence.New on it), etcd.
//
// The control, "one step (v1 only)": the same fleet with a one-step
// schedule claims in the wrapper itself, waits its 24 s, and holds.
func TestKeyspaceClaimWaitsTheWrappersNoticeWindow(t *testing.T) {
	T := t0.Add(-time.Hour)
	t.Run("past a v1-v2 cutover", func(t *testing.T) {
		checkKeyspaceNotice(t, snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: T, Layout: snowfence.V2()}))
	})
	t.Run("one step (v1 only)", func(t *testing.T) {
		checkKeyspaceNotice(t, snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}))
	})
}

// checkKeyspaceNotice plays TestKeyspaceClaimWaitsTheWrappersNoticeWindow
// on a fleet of schedule sched.
func checkKeyspaceNotice(t *testing.T, sched snowfence.Schedule) {
	c := etcdtest.Start(t, 1)
	base := newStore(t, c.Endpoints())
	if _, err := base.SetFleetSchedule(testCtx(t), 0, sched.String()); err != nil {
		t.Fatal(err)
	}
	snap := c.Snapshot(t)
	opts := func(kc *lease.KeeperConfig) {
		kc.Schedule, kc.LeaseFor, kc.SelfFence = sched, 30*time.Second, 20*time.Second
	}
	if w := lease.NoticeWindow(20 * time.Second); w <= etcdstore.MaxNoticeWindow || w > raisedNoticeWindow {
		t.Fatalf("notice window %s: the test needs it above etcd's %s and within the wrapper's %s", w, etcdstore.MaxNoticeWindow, raisedNoticeWindow)
	}

	clkA := fakeclock.New(t0)
	cs := &cutStore{Store: base}
	a, err := startHolder(t, raisedNotice{cs}, clkA, "a", lease.Range{Lo: 0, Hi: 0}, opts)
	if err != nil {
		t.Fatalf("A refused: %v", err)
	}
	claimedA := clkA.Now().WallMs
	if g, err := a.k.Grant(); err == nil {
		t.Logf("A (layout %s) claimed at %s; its first grant starts %d ms later (the wrapper's window is %s)",
			a.k.Status().Layout, lease.FormatMs(claimedA), g.StartMs-claimedA, raisedNoticeWindow)
	}
	a.issuing()
	untilRenewed(a, clkA, a.step)
	a.mint(100)

	// A is cut off; etcd is restored to before A's claim; B starts.
	cs.cut.Store(true)
	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	clkB := fakeclock.New(clkA.Time())
	b, err := startHolder(t, raisedNotice{newStore(t, c.Endpoints())}, clkB, "b", lease.Range{Lo: 0, Hi: 0}, opts)
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	claimed := clkB.Now().WallMs
	if g, err := b.k.Grant(); err == nil {
		t.Logf("B claimed machine %d (layout %s); its first grant starts at claim + %d ms", g.Machine, b.k.Status().Layout, g.StartMs-claimed)
	}
	var aLast int64
	for range 120 { // 30 s
		if tryMint(a, 100) > 0 {
			aLast = clkA.Now().WallMs
		}
		tryMint(b, 100)
		a.step(250 * time.Millisecond)
		b.step(250 * time.Millisecond)
	}
	t.Logf("A (cut off) last issued at B's claim + %d ms; B first at claim + %d ms", aLast-claimed, firstAfter(b.ids, claimed))
	checkUnique(t, a.ids, b.ids)
}
