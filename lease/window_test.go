package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// The restore window follows the keeper's own timings: a holder cut off
// from the store goes on issuing up to max(Reserve, SelfFence) after its
// last acknowledged renewal, so a claim after a restore must start later
// than that (plus a skew budget). The keeper passes it with every claim,
// with its schedule; a window set shorter is refused.
func TestKeeperRestoreWindow(t *testing.T) {
	c := etcdtest.Start(t, 1)
	for _, tc := range []struct {
		name string
		kc   lease.KeeperConfig
		want time.Duration
	}{
		// Reserve = LeaseFor = 10 s: 10 s × 1.1 + 1 s.
		{"defaults", lease.KeeperConfig{}, 12 * time.Second},
		// The case: --lease-ttl 30s --self-fence 20s with a
		// 10 s reservation; the self-fence is the longer. (etcd now
		// refuses a 20 s self-fence, whose notice window is above its
		// MaxNoticeWindow; the table stores accept it. The store here
		// admits it: admitNotice.)
		{"self-fence longer than the reserve", lease.KeeperConfig{LeaseFor: 30 * time.Second, SelfFence: 20 * time.Second, Reserve: 10 * time.Second}, 23 * time.Second},
		{"explicit, longer (within the store's 40 s)", lease.KeeperConfig{RestoreMargin: 30 * time.Second}, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &wrapStore{Store: newStore(t, c.Endpoints())}
			kc := tc.kc
			kc.Store, kc.Holder, kc.Range, kc.Clock = admitNotice{Store: w, notice: lease.NoticeWindow(20 * time.Second)}, "a", &lease.Range{Lo: 1, Hi: 1}, fakeclock.New(t0)
			k, err := leasetest.StartKeeper(testCtx(t), kc)
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close(testCtx(t), lease.UnknownIssued) // no generator
			reqs := w.requests()
			if len(reqs) == 0 {
				t.Fatal("no claim")
			}
			if got := reqs[0].RestoreWindow; got != tc.want {
				t.Errorf("ClaimRequest.RestoreWindow = %s, want %s", got, tc.want)
			}
			if got := reqs[0].Schedule; got != "v1" {
				t.Errorf("ClaimRequest.Schedule = %q, want v1", got)
			}
		})
	}
	if got := lease.RestoreWindow(30*time.Second, 20*time.Second); got != 34*time.Second {
		t.Errorf("RestoreWindow(30 s, 20 s) = %s, want 34 s", got)
	}
	s := newStore(t, c.Endpoints())
	for _, kc := range []lease.KeeperConfig{
		{RestoreMargin: 11 * time.Second}, // the old default, Reserve + 1 s
		{LeaseFor: 30 * time.Second, SelfFence: 20 * time.Second, Reserve: 10 * time.Second, RestoreMargin: 22 * time.Second},
	} {
		kc.Store, kc.Holder, kc.Clock = admitNotice{Store: s, notice: lease.NoticeWindow(20 * time.Second)}, "b", fakeclock.New(t0)
		if _, err := leasetest.StartKeeper(testCtx(t), kc); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("RestoreMargin %s with Reserve %s, SelfFence %s: %v, want ErrInvalid", kc.RestoreMargin, kc.Reserve, kc.SelfFence, err)
		}
	}
}

// TestRestoreWindowCoversTheCutOffHolder: after a restore the store keeps at
// least its MaxRestoreWindow, so a claimer with short timings starts after a
// cut-off holder with longer ones has fenced itself (an adversarial review of
// issue 10's fixes found it). The restore window a store kept after it noticed
// a restore was the claimer's own (ClaimRequest.RestoreWindow), but the holder
// it must outlast is another one, which may run with longer timings: nothing
// makes a fleet share one window. Holder A (--lease-ttl 30s --self-fence 20s,
// reserve 30 s: accepted) holds machine 9, claimed after the backup, and is
// cut off from etcd just after a renewal. Holder B (defaults: window 12 s)
// notices the restore at its next renewal, claims 9 (free in the restored
// store) and starts 12 s after it noticed, while A issues until 20 s after its
// last acknowledged renewal: the same ID.
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

// TestKeeperWindowAboveStoreMaxRefused: a keeper whose restore window is
// longer than the store keeps for every
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
