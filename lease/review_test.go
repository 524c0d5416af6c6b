package lease_test

// Found by the adversarial review of the fixes for issue 10: each test is a
// sequence of accepted configurations and operations that ended with two
// live holders issuing the same ID, and now must not.

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/revert"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// errCut is what a holder cut off from its store gets: a transient error
// of unknown outcome, as from a partition.
var errCut = errors.New("attack: cut off from the store")

// cutStore is a real store that, once cut is set, answers every call with
// errCut without reaching the store: a network partition around one
// holder.
//
// The partition is around the holder, not one keyspace: the siblings
// Keyspace opens are cut off with the cutStore they were opened from
// (their root).
type cutStore struct {
	lease.Store
	// root is the cutStore whose cut this one obeys; nil: its own.
	root *cutStore
	cut  atomic.Bool
}

// isCut reports whether c's root is cut off.
func (c *cutStore) isCut() bool {
	if c.root != nil {
		return c.root.cut.Load()
	}
	return c.cut.Load()
}

// Keyspace opens the real store's sibling behind a cutStore cut off with
// c. Opening one sends no request, so it is never refused.
func (c *cutStore) Keyspace(index int) (lease.Store, error) {
	sib, err := c.Store.Keyspace(index)
	if err != nil {
		return nil, err
	}
	root := c
	if c.root != nil {
		root = c.root
	}
	return &cutStore{Store: sib, root: root}, nil
}

func (c *cutStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	if c.isCut() {
		return nil, errCut
	}
	return c.Store.Claim(ctx, req)
}

func (c *cutStore) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	if c.isCut() {
		return nil, errCut
	}
	return c.Store.Extend(ctx, l, markMs, leaseFor)
}

func (c *cutStore) Get(ctx context.Context, n int) (lease.Record, error) {
	if c.isCut() {
		return lease.Record{}, errCut
	}
	return c.Store.Get(ctx, n)
}

func (c *cutStore) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	if c.isCut() {
		return errCut
	}
	return c.Store.Release(ctx, l, markMs)
}

// stepAll advances a clock shared by n sleeping keepers by d, and waits
// until all n sleep on it again.
func stepAll(t *testing.T, clk *fakeclock.Clock, n int, d time.Duration) {
	t.Helper()
	if err := clk.BlockUntilWaiters(testCtx(t), n); err != nil {
		t.Fatalf("keepers never went to sleep: %v", err)
	}
	clk.Advance(d)
	if err := clk.BlockUntilWaiters(testCtx(t), n); err != nil {
		t.Fatalf("keepers never went back to sleep: %v", err)
	}
}

// Found by review: the notice SetSchedule demands (now + 1 h) is measured on the
// operator's clock, and the marks that holders already reserved under the
// old fleet schedule are never compared with the new cutover: only the
// next extension is (CheckExtension). Uniqueness is promised not to depend
// on clock sync (docs/deployment.md), yet an operator whose clock is 2 h
// slow (or, the same thing, holders whose clocks are 2 h fast) puts the
// cutover before marks the fleet already holds. The v1 holder on machine 1
// goes on issuing below its mark (v1 layout) while a holder on the new
// schedule mints on machine 4 under v2 in the same milliseconds:
// 1<<12 == 4<<10, the same ID.
// SetSchedule now counts the notice from the later of the operator's clock
// and the highest mark stored, and refuses.
func TestScheduleCutoverBeforeReservedMarks(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	clk := fakeclock.New(t0)
	old := mustHolder(t, s, clk, "old", lease.Range{Lo: 1, Hi: 1})

	// The operator's host runs 2 h behind the fleet.
	opNow := t0.Add(-2 * time.Hour)
	at := opNow.Add(time.Hour + time.Minute).Truncate(time.Second)
	text := "v1,v2@" + at.Format(time.RFC3339)
	_, err := lease.SetSchedule(testCtx(t), s, text, opNow, 0)
	if !errors.Is(err, lease.ErrInvalid) {
		t.Fatalf("SetSchedule %s on the operator's clock %s, 2 h behind the mark %s: %v; want ErrInvalid",
			text, opNow.Format(time.RFC3339), time.UnixMilli(old.k.Status().MarkMs).UTC().Format(time.RFC3339), err)
	}
	t.Logf("refused: %v", err)
	if !revert.Schedule {
		return
	}
	// Under the revert tag, write it anyway and show the duplicate.
	if _, err := s.SetFleetSchedule(testCtx(t), 0, text); err != nil {
		t.Fatal(err)
	}
	sched, err := snowfence.ParseSchedule(text)
	if err != nil {
		t.Fatal(err)
	}
	nu := mustHolder(t, s, clk, "new", lease.Range{Lo: 4, Hi: 4}, func(kc *lease.KeeperConfig) { kc.Schedule = sched })

	// Same millisecond, first ID of it for each generator.
	a := old.mint(1)
	b := nu.mint(1)
	if a[0] == b[0] {
		t.Errorf("machine 1 on v1 (mark %s) and machine 4 on %s both issued %d at %s: the cutover %s is before a mark reserved under the old schedule",
			time.UnixMilli(old.k.Status().MarkMs).UTC().Format(time.RFC3339Nano), text, a[0], clk.Time().Format(time.RFC3339Nano), at.Format(time.RFC3339))
	}
	checkUnique(t, old.ids, nu.ids)
}

// Found by review: the restore window a store kept after it noticed a restore
// is the claimer's own (ClaimRequest.RestoreWindow), but the holder it must
// outlast is another one, which may run with longer timings: nothing makes
// a fleet share one window. Holder A (--lease-ttl 30s --self-fence 20s,
// reserve 30 s: accepted) holds machine 9, claimed after the backup, and is
// cut off from etcd just after a renewal. Holder B (defaults: window 12 s)
// notices the restore at its next renewal, claims 9 (free in the restored
// store) and starts 12 s after it noticed, while A issues until 20 s after
// its last acknowledged renewal: the same ID.
// The store now keeps at least its MaxRestoreWindow (40 s on etcd, the
// longest window StartKeeper accepts on it): b starts after a has fenced
// itself.
//
// (etcd now refuses a's 20 s self-fence at start too: its notice window,
// 23 s, is above etcd's MaxNoticeWindow. a runs on a stand-in of its store
// that admits it — admitNotice — so that the test still shows the restore
// floor outlasting a cut-off holder with longer timings than the
// claimer's, as on the tables, where a self-fence up to 31.8 s is
// accepted beside a claimer's 5 s one.)
func TestRestoreWindowCoversTheCutOffHolder(t *testing.T) {
	c := etcdtest.Start(t, 1)
	clk := fakeclock.New(time.Now().Truncate(time.Millisecond))
	connect := func() *etcdstore.Store {
		s, err := etcdstore.Connect(testCtx(t), etcdstore.ClientConfig{Endpoints: c.Endpoints()},
			etcdstore.Config{Prefix: "/test/" + t.Name(), RequestTimeout: 2 * time.Second, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	snap := c.Snapshot(t)

	sa := &cutStore{Store: admitNotice{Store: connect(), notice: lease.NoticeWindow(20 * time.Second)}}
	a := mustHolder(t, sa, clk, "a", lease.Range{Lo: 9, Hi: 9}, func(kc *lease.KeeperConfig) {
		kc.LeaseFor, kc.SelfFence = 30*time.Second, 20*time.Second
	})
	sb := connect()
	b := mustHolder(t, sb, clk, "b", lease.Range{Lo: 8, Hi: 9})
	if st := b.k.Status(); st.Machine != 8 {
		t.Fatalf("b holds %d, want 8", st.Machine)
	}
	stepAll(t, clk, 2, 2*time.Second) // both renew
	lastAck := clk.Now().WallMs
	sa.cut.Store(true)
	a.mint(1)

	c.Restore(t, snap, etcdtest.RestoreOptions{RevisionBump: 1_000_000})
	waitAnswers(t, sb)
	var noticed int64
	for i := 0; i < 5 && b.k.Status().Machine != 9; i++ {
		stepAll(t, clk, 2, 2*time.Second)
		noticed = clk.Now().WallMs
	}
	st := b.k.Status()
	if st.Machine != 9 {
		t.Fatalf("b did not claim 9 after noticing the restore: %+v", st)
	}
	g, err := b.k.Grant()
	if err != nil {
		t.Fatalf("b's grant: %v", err)
	}
	t.Logf("a's last ack %d; b noticed at +%dms and starts at +%dms; a self-fences at +%dms",
		lastAck, noticed-lastAck, g.StartMs-lastAck, 20_000)
	// Walk to b's start; both keep renewing (a fails, as it is cut off).
	for clk.Now().WallMs < g.StartMs {
		stepAll(t, clk, 2, min(time.Second, time.Duration(g.StartMs-clk.Now().WallMs)*time.Millisecond))
	}
	ia, errA := a.g.Next(context.Background())
	ib, errB := b.g.Next(context.Background())
	if errB != nil {
		t.Fatalf("b at its start: %v, want it issuing", errB)
	}
	if errA == nil && ia == ib {
		t.Errorf("a (cut off, self-fence 20 s) and b (window 12 s) both issued %d on machine 9 at %s", ia,
			time.UnixMilli(clk.Now().WallMs).UTC().Format(time.RFC3339Nano))
	}
	if errA == nil {
		t.Errorf("a still issues %dms after its last acknowledged renewal, when b starts on its number", clk.Now().WallMs-lastAck)
	}
	checkUnique(t, a.ids, b.ids)
}

// admitNotice is a real store whose MaxNoticeWindow is notice: a stand-in
// that lets a test start a keeper with a longer self-fence than the store
// admits.
type admitNotice struct {
	lease.Store
	notice time.Duration
}

func (a admitNotice) MaxNoticeWindow() time.Duration { return a.notice }

// A keeper whose restore window is longer than the store keeps for every
// holder after a restore is refused at start: another process's claim
// could start while it, cut off, still issues.
func TestKeeperWindowAboveStoreMaxRefused(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	_, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{Store: s, Holder: "long", Clock: fakeclock.New(t0),
		LeaseFor: time.Minute, SelfFence: 40 * time.Second, RenewEvery: 10 * time.Second})
	if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), etcdstore.MaxRestoreWindow.String()) {
		t.Fatalf("StartKeeper with a 67 s restore window on etcd (max %s): %v, want ErrInvalid naming the maximum", etcdstore.MaxRestoreWindow, err)
	}
	t.Logf("refused: %v", err)
}
