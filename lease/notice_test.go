package lease_test

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
	"github.com/snowfence/snowfence/lease"
)

// noticeHolder starts a keeper with short timings of its own (a 1 s
// self-fence: its own notice window is 2.1 s) on s, and a generator, on
// clk.
func noticeHolder(t *testing.T, s lease.Store, clk *fakeclock.Clock) *holder {
	t.Helper()
	return mustHolder(t, s, clk, "a", lease.Range{Lo: 0, Hi: 1023}, func(kc *lease.KeeperConfig) {
		kc.LeaseFor, kc.RenewEvery, kc.SelfFence = 3*time.Second, 500*time.Millisecond, time.Second
	})
}

// checkNoticeFloor checks that the keeper's grant starts no earlier than
// floor, that the generator refuses (not-started) shortly before it, and that
// it issues from it on — stepping the clock in renewal-sized steps, so the
// keeper renews as it would.
func checkNoticeFloor(t *testing.T, h *holder, floor int64) {
	t.Helper()
	g, err := h.k.Grant()
	if err != nil {
		t.Fatalf("no grant after the claim: %v", err)
	}
	if g.StartMs < floor {
		t.Fatalf("the first grant after the claim starts at %s, want ≥ %s (the claim's return + the store's MaxNoticeWindow %s)",
			lease.FormatMs(g.StartMs), lease.FormatMs(floor), etcdstore.MaxNoticeWindow)
	}
	for h.clk.Now().WallMs+500 < floor {
		h.step(500 * time.Millisecond)
	}
	// 100 ms before: refused (a start up to MaxBackwardWait ahead would be
	// waited for instead).
	h.step(time.Duration(floor-100-h.clk.Now().WallMs) * time.Millisecond)
	var fe *snowfence.FencedError
	if _, err := h.g.Next(context.Background()); !errors.As(err, &fe) || fe.Reason != "not-started" {
		t.Fatalf("100 ms before the floor: %v, want fenced (not-started)", err)
	}
	h.step(100 * time.Millisecond)
	id := h.mint(1)[0]
	if ts := snowfence.V1().TimeOf(id).UnixMilli(); ts < floor {
		t.Fatalf("first ID stamped %s, below the floor %s", lease.FormatMs(ts), lease.FormatMs(floor))
	}
}

// TestFirstGrantWaitsOutTheNoticeWindow: the first grant of a claim starts
// no earlier than the moment the claim returned plus the store's
// MaxNoticeWindow — not the claimer's own, shorter window (another holder's
// self-fence may be the store's longest), and not from the moment the claim
// was sent (it commits at some instant before it returns). A claim after a
// loss waits again. Fails with snowfence_revert_notice: the grant starts at
// the claim.
func TestFirstGrantWaitsOutTheNoticeWindow(t *testing.T) {
	clk := fakeclock.New(t0)
	s := &stubStore{machine: 7, clk: clk, claimTakes: 300 * time.Millisecond}
	h := noticeHolder(t, s, clk)
	if own := lease.NoticeWindow(time.Second); own >= etcdstore.MaxNoticeWindow {
		t.Fatalf("the keeper's own window %s is not below the store's %s: this test would show nothing", own, etcdstore.MaxNoticeWindow)
	}
	returned := t0.Add(300 * time.Millisecond).UnixMilli()
	checkNoticeFloor(t, h, returned+etcdstore.MaxNoticeWindow.Milliseconds())

	// Another claim of the number (here: it was taken and freed) costs the
	// holder its lease at its next renewal; it claims again, and waits
	// again.
	h.mint(10)
	s.steal()
	h.step(500 * time.Millisecond)
	if st := h.k.Status(); st.Losses != 1 || st.Claims != 2 {
		t.Fatalf("status after the number was taken: %+v, want one loss and a second claim", st)
	}
	returned = h.clk.Now().WallMs // the claim ran in that renewal's turn, and advanced the clock as it returned
	checkNoticeFloor(t, h, returned+etcdstore.MaxNoticeWindow.Milliseconds())
}

// TestNoticeWindowConfigChecks: a keeper whose own notice window is longer
// than the store's MaxNoticeWindow is refused at start, saying which
// self-fence would do; the longest self-fence it names is accepted.
func TestNoticeWindowConfigChecks(t *testing.T) {
	longest := 6363 * time.Millisecond // (8 s − 1 s) / 1.1, to the ms below
	if w := lease.NoticeWindow(longest); w > etcdstore.MaxNoticeWindow {
		t.Fatalf("NoticeWindow(%s) = %s, above etcd's bound %s", longest, w, etcdstore.MaxNoticeWindow)
	}
	ok := lease.KeeperConfig{Store: windowStore{max: etcdstore.MaxRestoreWindow}, SelfFence: longest}
	if _, err := lease.Defaults(ok); err != nil {
		t.Errorf("self-fence %s refused: %v", longest, err)
	}
	long := lease.KeeperConfig{Store: windowStore{max: etcdstore.MaxRestoreWindow}, SelfFence: longest + time.Millisecond}
	_, err := lease.Defaults(long)
	if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "at most 6.363s") {
		t.Fatalf("self-fence %s: %v, want ErrInvalid naming the longest self-fence 6.363s", long.SelfFence, err)
	}
	t.Logf("operator sees: %v", err)
	if got, want := lease.NoticeWindow(5*time.Second), 6500*time.Millisecond; got != want {
		t.Errorf("NoticeWindow(5 s) = %s, want %s (× 1.1 + 1 s)", got, want)
	}
}

// cutStub is a stubStore seen by a holder that can be cut off from it:
// while cut, its renewals and re-reads fail without reaching the store.
type cutStub struct {
	*stubStore
	cut atomic.Bool
}

func (c *cutStub) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	return c.stubStore.Extend(ctx, l, markMs, leaseFor)
}

func (c *cutStub) Get(ctx context.Context, n int) (lease.Record, error) {
	if c.cut.Load() {
		return lease.Record{}, errCut
	}
	return c.stubStore.Get(ctx, n)
}

// TestNoticeFloorOutlastsCutOffHolder: the running holder whose renewals
// fail when another process claims its number (the store forgot its claim
// — restored — while it was cut off) never learns of the claim; it issues
// until its self-fence, SelfFence after the send of its last acknowledged
// renewal. The claimer's first grant starts after that. Both mint every
// 250 ms on one clock; no ID twice. (A floor of the next renewal and its
// timeouts alone would not cover this holder: it has no next renewal that
// reaches the store.) Fails with snowfence_revert_notice.
func TestNoticeFloorOutlastsCutOffHolder(t *testing.T) {
	clk := fakeclock.New(t0)
	s := &stubStore{machine: 7}
	cs := &cutStub{stubStore: s}
	a := mustHolder(t, cs, clk, "a", lease.Range{Lo: 7, Hi: 7})
	a.mint(10)
	// Renewed just now (the walk ends on a renewal); cut off, and the
	// store is restored to before its claim.
	cs.cut.Store(true)
	s.restore()
	b, err := startHolder(t, s, clk, "b", lease.Range{Lo: 7, Hi: 7})
	if err != nil {
		t.Fatal(err)
	}
	claimed := clk.Now().WallMs
	var aLast int64
	for range 60 {
		if ids, err := a.g.NextN(context.Background(), 10); err == nil {
			a.ids = append(a.ids, ids...)
			aLast = clk.Now().WallMs
		}
		if ids, err := b.g.NextN(context.Background(), 10); err == nil {
			b.ids = append(b.ids, ids...)
		}
		stepAll(t, clk, 2, 250*time.Millisecond)
	}
	if aLast <= claimed || len(b.ids) == 0 {
		t.Fatalf("a last issued at +%d ms, b issued %d IDs: the test shows nothing", aLast-claimed, len(b.ids))
	}
	t.Logf("a (cut off) last issued %d ms after b's claim; b first at +%d ms", aLast-claimed,
		snowfence.V1().TimeOf(b.ids[0]).UnixMilli()-claimed)
	checkUnique(t, a.ids, b.ids)
}
