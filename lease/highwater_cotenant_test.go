package lease_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// multiStub is stubStore's rules over several machine numbers: a store
// that more than one holder leases from at once, as the embedded etcd is
// for every process of its host (docs/deployment.md: a second serve, the
// CLI, a node.Start on its client URL). down makes every call fail as an
// unreachable store does (the embedded etcd stopped with its process).
type multiStub struct {
	lease.Store
	mu     sync.Mutex
	down   bool
	claims int
	nums   map[int]*multiSlot
}

type multiSlot struct {
	holder, claim string
	token         uint64
	markMs        int64
}

var errStubDown = errors.New("stub store unreachable")

func newMultiStub(numbers ...int) *multiStub {
	s := &multiStub{nums: map[int]*multiSlot{}}
	for _, n := range numbers {
		s.nums[n] = &multiSlot{}
	}
	return s
}

func (s *multiStub) Region() int                          { return 0 }
func (s *multiStub) MaxRestoreWindow() time.Duration      { return etcdstore.MaxRestoreWindow }
func (s *multiStub) MaxNoticeWindow() time.Duration       { return etcdstore.MaxNoticeWindow }
func (s *multiStub) RegistryReader() lease.RegistryReader { return nil }

func (s *multiStub) Claim(_ context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, errStubDown
	}
	for n := req.Range.Lo; n <= req.Range.Hi; n++ {
		sl := s.nums[n]
		if sl == nil || sl.holder != "" {
			continue
		}
		s.claims++
		sl.holder, sl.token, sl.claim = req.Holder, sl.token+1, fmt.Sprintf("claim-%d", s.claims)
		return &lease.Lease{Machine: n, Holder: sl.holder, Token: sl.token, Claim: sl.claim,
			StartMs: max(sl.markMs, req.NowMs), MarkMs: sl.markMs, Schedule: req.Schedule}, nil
	}
	return nil, lease.ErrNoFreeNumber
}

func (s *multiStub) slot(l *lease.Lease) (*multiSlot, error) {
	if s.down {
		return nil, errStubDown
	}
	sl := s.nums[l.Machine]
	if sl == nil || sl.holder != l.Holder || sl.token != l.Token || sl.claim != l.Claim {
		return nil, fmt.Errorf("%w: machine %d", lease.ErrLost, l.Machine)
	}
	return sl, nil
}

func (s *multiStub) Extend(_ context.Context, l *lease.Lease, markMs int64, _ time.Duration) (*lease.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, err := s.slot(l)
	if err != nil {
		return nil, err
	}
	sl.markMs = max(sl.markMs, markMs)
	nl := *l
	nl.MarkMs = sl.markMs
	return &nl, nil
}

func (s *multiStub) Release(_ context.Context, l *lease.Lease, markMs int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, err := s.slot(l)
	if err != nil {
		return err
	}
	sl.holder, sl.markMs = "", markMs
	return nil
}

func (s *multiStub) Get(_ context.Context, n int) (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return lease.Record{}, errStubDown
	}
	sl := s.nums[n]
	return lease.Record{Machine: n, Holder: sl.holder, Token: sl.token, Claim: sl.claim, MarkMs: sl.markMs}, nil
}

// restore puts every number back to never claimed (a backup taken before
// any claim), and the store up again.
func (s *multiStub) restore() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := range s.nums {
		s.nums[n] = &multiSlot{}
	}
	s.down = false
}

func (s *multiStub) setDown(d bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = d
}

// TestHighWaterCloseStaysAboveCoTenant: the high-water file's floor
// is the only thing between a restarted embedded-etcd process (P1) and
// the IDs issued before a restore of its data directory with the clock
// behind, and P1's claim may take ANY number of the store, including one
// another process of the host (P2, leasing through the embedded etcd's
// client URL, as docs/deployment.md describes) issued on. Close used to
// lower the file to P1's own last ID (highWater.settle), below what P2
// still issues (an adversarial review found it); it now lowers it no
// further than the clock plus the store's notice window, which outlasts
// P2's self-fence. The sequence, which minted 100 duplicates before:
//
//  1. P1 (keeper with the high-water file) holds 7, P2 (no file: another
//     process on the client URL) holds 8; both mint for a minute.
//  2. P1 stops cleanly (Node.Close: generator, keeper — settle lowers the
//     file to P1's last ID L — then the embedded etcd). P2's renewals now
//     fail, and it issues on 8 until its self-fence: 100 IDs at L + 1 s.
//  3. The data directory is restored from a backup taken before any claim
//     (number 8 free, no mark); the file, kept outside it as the runbook
//     says, still holds L.
//  4. P1 restarts with its clock a minute behind (the item-7 case the file
//     exists for) and claims number 8. Its first grant started at
//     max(L, now + notice window) = L: it minted at L + 1 s on number 8.
//
// 100 IDs repeated (P2's at L + 1 s, sequence 0–99). The runbook's advice for
// the other processes ("run raise-marks before starting them") cannot help:
// the colliding claim is P1's own, made as it starts, before any operator
// step. With a crash of P1 instead of Close, the file is left 18 s ahead of
// P1's renewals and P2's IDs (within its 5 s self-fence of the etcd's end)
// stay below it: the lowering at Close is what opens the path.
func TestHighWaterCloseStaysAboveCoTenant(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data.highwater")
	s := newMultiStub(7, 8)
	clk := fakeclock.New(t0)
	p1, err := startHolder(t, s, clk, "p1", lease.Range{Lo: 7, Hi: 7}, func(kc *lease.KeeperConfig) {
		kc.HighWater = lease.NewHighWaterFile(path, true)
	})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := startHolder(t, s, clk, "p2", lease.Range{Lo: 8, Hi: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*holder{p1, p2} { // both wait out the notice window
		for g, err := h.k.Grant(); err != nil || clk.Now().WallMs < g.StartMs; g, err = h.k.Grant() {
			stepAll(t, clk, 2, 250*time.Millisecond)
		}
	}
	for range 30 { // a minute of IDs on both, renewing
		p1.mint(100)
		p2.mint(100)
		stepAll(t, clk, 2, 2*time.Second)
	}
	p1.mint(100)
	p1.g.Close()
	if err := p1.k.Close(testCtx(t), p1.g.LastIssued()); err != nil {
		t.Fatal(err)
	}
	lastMs := p1.g.LastIssued()
	rec, err := lease.NewHighWaterFile(path, false).Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("P1 closed: its last ID ends at %s; the high-water file holds %s", lease.FormatMs(lastMs), lease.FormatMs(rec))

	// The embedded etcd stops with P1; P2 goes on within its self-fence.
	s.setDown(true)
	p2.step(time.Second)
	collideAt := clk.Now().WallMs
	p2.mint(100)
	t.Logf("P2 minted 100 IDs on machine 8 at %s, after P1's file mark", lease.FormatMs(collideAt))
	p2.g.Close()

	// The data directory is restored (no claim, no mark); the file is not.
	s.restore()

	// P1 restarts a minute behind, on the 250 ms grid that meets collideAt.
	behind := fakeclock.New(time.UnixMilli(collideAt).Add(-time.Minute))
	p1b := mustHolder(t, s, behind, "p1-restarted", lease.Range{Lo: 8, Hi: 8}, func(kc *lease.KeeperConfig) {
		kc.HighWater = lease.NewHighWaterFile(path, false)
	})
	// It mints at collideAt if it may issue by then (the file lowered to
	// L: P2's IDs again), else where it first may (above the file).
	for behind.Now().WallMs < collideAt {
		p1b.step(250 * time.Millisecond)
	}
	t.Logf("P1 restarted issues at %s (P2 minted at %s)", lease.FormatMs(behind.Now().WallMs), lease.FormatMs(collideAt))
	p1b.mint(100)
	checkUnique(t, p1.ids, p2.ids, p1b.ids)
}
