package lease_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// These tests run the Keeper against real etcd (embedded, in-process) with a
// fake clock: the keeper's schedule and the generator's checks move only
// when the test advances time, while etcd runs for real.

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newStore connects a store under a prefix of its own to endpoints.
func newStore(t *testing.T, endpoints []string) *etcdstore.Store {
	t.Helper()
	s, err := etcdstore.Connect(testCtx(t), etcdstore.ClientConfig{Endpoints: endpoints},
		etcdstore.Config{Prefix: "/test/" + t.Name(), RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// holder is a keeper and its generator on one fake clock.
type holder struct {
	t   *testing.T
	k   *lease.Keeper
	g   *snowfence.Generator
	clk *fakeclock.Clock
	ids []snowfence.ID
}

func startHolder(t *testing.T, s lease.Store, clk *fakeclock.Clock, name string, rng lease.Range, opts ...func(*lease.KeeperConfig)) (*holder, error) {
	t.Helper()
	kc := lease.KeeperConfig{Store: s, Holder: name, Range: &rng, Clock: clk}
	for _, o := range opts {
		o(&kc)
	}
	k, err := leasetest.StartKeeper(testCtx(t), kc)
	if err != nil {
		return nil, err
	}
	g, err := snowfence.New(snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		k.Close(context.Background(), lease.UnknownIssued)
		t.Fatal(err)
	}
	h := &holder{t: t, k: k, g: g, clk: clk}
	t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
	// The keeper's loop is asleep on the clock once StartKeeper returns.
	h.settle()
	return h, nil
}

// mustHolder starts a holder as startHolder does, failing the test if it
// cannot, and lets the clock run until it issues (issuing).
func mustHolder(t *testing.T, s lease.Store, clk *fakeclock.Clock, name string, rng lease.Range, opts ...func(*lease.KeeperConfig)) *holder {
	t.Helper()
	h, err := startHolder(t, s, clk, name, rng, opts...)
	if err != nil {
		t.Fatal(err)
	}
	h.issuing()
	return h
}

// issuing lets the clock run, in steps short enough for every keeper
// timing the tests use to renew on time (every keeper asleep on the clock
// when it starts, on a clock shared by several), until the grant of the keeper's
// claim has started: a claim's first grant starts the store's
// MaxNoticeWindow after the claim (lease/fence_notice.go), so a holder just
// started refuses (not-started) for that long. It returns the time it let
// pass.
func (h *holder) issuing() time.Duration {
	h.t.Helper()
	const step = 250 * time.Millisecond
	var passed time.Duration
	// Every keeper asleep on the clock now (other holders' on a shared
	// one) renews in each step before the next.
	h.settle()
	n := h.clk.Waiters()
	for {
		g, err := h.k.Grant()
		if err == nil && h.clk.Now().WallMs >= g.StartMs {
			return passed
		}
		if passed > 10*time.Minute {
			h.t.Fatalf("the keeper's grant did not start within %s: %v (status %+v)", passed, err, h.k.Status())
		}
		stepAll(h.t, h.clk, n, step)
		passed += step
	}
}

// settle waits until the keeper's loop is asleep on the clock again.
func (h *holder) settle() {
	h.t.Helper()
	if err := h.clk.BlockUntilWaiters(testCtx(h.t), 1); err != nil {
		h.t.Fatalf("keeper never went back to sleep: %v", err)
	}
}

// step lets d pass and waits for the keeper to act on it.
func (h *holder) step(d time.Duration) {
	h.t.Helper()
	h.settle()
	h.clk.Advance(d)
	h.settle()
}

// mint takes n IDs, failing the test on any refusal.
func (h *holder) mint(n int) []snowfence.ID {
	h.t.Helper()
	ids, err := h.g.NextN(context.Background(), n)
	if err != nil {
		h.t.Fatalf("NextN: %v (keeper %+v)", err, h.k.Status())
	}
	h.ids = append(h.ids, ids...)
	return ids
}

func (h *holder) last() snowfence.ID { return h.ids[len(h.ids)-1] }

func isFenced(err error) bool { return errors.Is(err, snowfence.ErrFenced) }

func TestKeeperTwoHoldersRaceForOneNumber(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	var wg sync.WaitGroup
	results := make([]error, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{
				Store: s, Holder: fmt.Sprintf("racer-%d", i), Range: &lease.Range{Lo: 5, Hi: 5}, Clock: fakeclock.New(t0)})
			if err == nil {
				t.Cleanup(func() { k.Close(context.Background(), lease.UnknownIssued) }) // no generator
			}
			results[i] = err
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range results {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, lease.ErrNoFreeNumber):
			t.Errorf("racer %d: %v, want ErrNoFreeNumber", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d holders won number 5, want exactly 1", won)
	}
}

func TestKeeperReservesBeforeIssuing(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	clk := fakeclock.New(t0)
	h, err := startHolder(t, s, clk, "a", lease.Range{Lo: 9, Hi: 9})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Get(testCtx(t), 9)
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.UnixMilli() + 10_000; rec.MarkMs < want || rec.Holder != "a" {
		t.Fatalf("record after claim = %+v, want holder a and mark ≥ %d (now + 10 s)", rec, want)
	}
	// The first grant starts the store's notice window after the claim;
	// every renewal until then moves the mark ahead of the clock too.
	h.issuing()
	for _, id := range h.mint(1000) {
		if rec, _ = s.Get(testCtx(t), 9); snowfence.V1().TimeOf(id).UnixMilli() >= rec.MarkMs {
			t.Fatalf("ID %d at %s not below the stored mark %d", id, snowfence.V1().TimeOf(id), rec.MarkMs)
		}
	}
	// Each renewal moves the mark ahead of the clock.
	h.step(2 * time.Second)
	rec2, _ := s.Get(testCtx(t), 9)
	if want := clk.Now().WallMs + 10_000; rec2.MarkMs != want {
		t.Errorf("mark after a renewal = %d, want now + 10 s = %d", rec2.MarkMs, want)
	}
	if st := h.k.Status(); st.State != lease.StateHeld || st.Machine != 9 || st.Claims != 1 {
		t.Errorf("status = %+v", st)
	}
}

func TestKeeperStoreOutage(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	h := mustHolder(t, s, fakeclock.New(t0), "a", lease.Range{Lo: 0, Hi: 3},
		func(kc *lease.KeeperConfig) { kc.RequestTimeout = 300 * time.Millisecond })
	h.mint(10)

	// Down for 4.5 s, shorter than the 5 s self-fence: no refusal.
	c.Stop(0)
	for range 9 {
		h.step(500 * time.Millisecond)
		h.mint(10)
	}
	c.Restart(t, 0)
	waitAnswers(t, s)
	h.step(500 * time.Millisecond) // the first renewal after the outage
	h.mint(10)
	if st := h.g.Stats(); st.Refused["fenced"] != 0 {
		t.Fatalf("refusals during a short outage: %+v", st)
	}
	if st := h.k.Status(); st.RenewFailures == 0 {
		t.Errorf("no renewal failures recorded during the outage: %+v", st)
	}

	// Down for longer than the self-fence window: refusal, then recovery.
	c.Stop(0)
	for range 10 {
		h.step(500 * time.Millisecond)
	}
	if _, err := h.g.Next(context.Background()); !isFenced(err) {
		t.Fatalf("5 s into an outage: err = %v, want ErrFenced", err)
	}
	if hl := h.g.Health(); hl.Issuing || hl.Reason != "fenced" {
		t.Errorf("health during the outage = %+v", hl)
	}
	c.Restart(t, 0)
	waitAnswers(t, s)
	h.step(500 * time.Millisecond)
	before := h.last()
	if got := h.mint(1)[0]; got <= before {
		t.Fatalf("after recovery: %d not above %d", got, before)
	}
}

// waitAnswers polls the store until etcd answers again after a restart
// (bounded: the test's context).
func waitAnswers(t *testing.T, s lease.Admin) {
	t.Helper()
	ctx := testCtx(t)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := s.List(cctx)
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("etcd did not answer after restart: %v", err)
		}
	}
}

func TestKeeperRestartNeverRepeats(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	clk := fakeclock.New(t0)
	a := mustHolder(t, s, clk, "host/pid-1/1000", lease.Range{Lo: 7, Hi: 7})
	a.mint(1000)
	a.mint(1000)
	last := a.last()
	// The owner tells the keeper what was issued: the release mark is its
	// generator's LastIssued, which the next holder starts at or above.
	if err := a.k.Close(testCtx(t), a.g.LastIssued()); err != nil {
		t.Fatal(err)
	}
	rec, _ := s.Get(testCtx(t), 7)
	if rec.Held() || rec.MarkMs != a.g.LastIssued() {
		t.Fatalf("after release: %+v, want free with mark = last issued end %d", rec, a.g.LastIssued())
	}
	// The restarted process (a new holder identity) gets number 7 back at
	// the same instant: its lease starts at the end of its predecessor's
	// last millisecond, not below it. (Its first grant starts later still,
	// after the store's notice window.)
	b, err := startHolder(t, s, clk, "host/pid-1/2000", lease.Range{Lo: 7, Hi: 7})
	if err != nil {
		t.Fatal(err)
	}
	if l := b.k.Lease(); l.StartMs < a.g.LastIssued() {
		t.Fatalf("restarted holder's lease starts at %d, below its predecessor's last issued end %d", l.StartMs, a.g.LastIssued())
	}
	b.issuing()
	if first := b.mint(1)[0]; first <= last {
		t.Fatalf("restarted holder's first ID %d is not above its predecessor's last %d", first, last)
	}
}

func TestKeeperQuarantine(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	h := mustHolder(t, s, fakeclock.New(t0), "a", lease.Range{Lo: 3, Hi: 4})
	first := h.k.Status().Machine
	h.mint(5)
	if err := s.Quarantine(testCtx(t), first); err != nil {
		t.Fatal(err)
	}
	// The next renewal fails: the keeper drops the number and claims the
	// other one at once.
	h.step(2 * time.Second)
	st := h.k.Status()
	if st.Machine == first || st.Machine == -1 || st.Losses != 1 {
		t.Fatalf("after quarantine of %d: status %+v, want the other number held", first, st)
	}
	h.issuing() // the new claim's notice window
	if got := h.mint(1)[0]; got <= h.ids[4] || snowfence.V1().Split(got).Machine != st.Machine {
		t.Fatalf("ID after moving numbers: %d", got)
	}
	// Nobody can claim the quarantined number; after release it is free.
	if _, err := startHolder(t, s, fakeclock.New(t0.Add(time.Minute)), "b", lease.Range{Lo: first, Hi: first}); !errors.Is(err, lease.ErrNoFreeNumber) {
		t.Fatalf("claim of a quarantined number: %v, want ErrNoFreeNumber", err)
	}
	if err := s.Unquarantine(testCtx(t), first); err != nil {
		t.Fatal(err)
	}
	mustHolder(t, s, fakeclock.New(t0.Add(time.Minute)), "b", lease.Range{Lo: first, Hi: first})
}

// The holder's etcd lease is revoked, or its key replaced by another
// holder's, behind its back: the next extension fails the token compare and
// the holder stops issuing on that number at once.
func TestKeeperLeaseTakenBehindItsBack(t *testing.T) {
	for _, how := range []string{"revoked", "replaced"} {
		t.Run(how, func(t *testing.T) {
			c := etcdtest.Start(t, 1)
			s := newStore(t, c.Endpoints())
			h := mustHolder(t, s, fakeclock.New(t0), "a", lease.Range{Lo: 2, Hi: 2})
			h.mint(5)
			oldToken := h.k.Status().Token
			cli := c.Client(t)
			key := "/test/" + t.Name() + "/0/owner/2"
			resp, err := cli.Get(testCtx(t), key)
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("owner key %s: %v %v", key, resp, err)
			}
			if _, err := cli.Revoke(testCtx(t), leaseID(resp.Kvs[0].Lease)); err != nil {
				t.Fatal(err)
			}
			if how == "replaced" {
				// Someone else's key with a lease of its own: our etcd
				// lease is gone, but a keep-alive on a new lease would
				// look fine; only the create revision tells.
				g, _ := cli.Grant(testCtx(t), 30)
				if _, err := cli.Put(testCtx(t), key, `{"holder":"intruder"}`, withLease(g.ID)); err != nil {
					t.Fatal(err)
				}
			}
			h.step(2 * time.Second)
			if _, err := h.g.Next(context.Background()); !isFenced(err) {
				t.Fatalf("after the lease was %s: err = %v, want ErrFenced", how, err)
			}
			// Revoked: number 2 is free again, and the keeper claims it
			// anew (a new token, starting at its old mark). Replaced: it
			// is held by the intruder, and the keeper keeps claiming.
			if st := h.k.Status(); st.Losses != 1 || st.Token == oldToken {
				t.Fatalf("status = %+v, want one loss and not the old token %d", st, oldToken)
			}
			// Unlike etcd's Session.Done, Closed stays open through a
			// loss: the keeper runs on until Close.
			if isClosed(h.k.Closed()) {
				t.Fatal("Closed() is closed after a lost lease; want it open until Close")
			}
			if err := h.k.Close(testCtx(t), h.g.LastIssued()); err != nil {
				t.Fatal(err)
			}
			if !isClosed(h.k.Closed()) {
				t.Fatal("Closed() is still open after Close returned")
			}
		})
	}
}

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestKeeperConfigChecks(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	for _, kc := range []lease.KeeperConfig{
		{},
		{Store: s, RenewEvery: 5 * time.Second, SelfFence: 5 * time.Second},
		{Store: s, LeaseFor: 5 * time.Second, SelfFence: 5 * time.Second},
		{Store: s, Margin: 20 * time.Second},
	} {
		if _, err := leasetest.StartKeeper(testCtx(t), kc); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("StartKeeper(%+v) = %v, want ErrInvalid", kc, err)
		}
	}
}

// A keeper whose only number was taken from it claims it back once it is
// free, and its generator waits for the mark it left rather than failing.
func TestKeeperReclaimsItsOnlyNumber(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	h := mustHolder(t, s, fakeclock.New(t0), "a", lease.Range{Lo: 2, Hi: 2})
	before := h.mint(10)
	cli := c.Client(t)
	resp, err := cli.Get(testCtx(t), "/test/"+t.Name()+"/0/owner/2")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("owner key: %v %v", resp, err)
	}
	if _, err := cli.Revoke(testCtx(t), leaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	h.step(2 * time.Second)
	st := h.k.Status()
	if st.Losses != 1 || st.Machine != 2 || st.Claims != 2 {
		t.Fatalf("status after the loss = %+v, want number 2 claimed again", st)
	}
	// The new lease starts at the mark the old one reserved (10 s ahead):
	// refused until then, not failed for ever.
	if _, err := h.g.Next(context.Background()); !isFenced(err) {
		t.Fatalf("before the old mark: err = %v, want ErrFenced (not-started)", err)
	}
	for range 5 {
		h.step(2 * time.Second)
	}
	if got := h.mint(1)[0]; got <= before[len(before)-1] {
		t.Fatalf("after re-claiming: %d not above %d", got, before[len(before)-1])
	}
}

// A generator built without a clock takes its keeper's: the self-fence
// compares the two clocks' monotonic readings.
func TestGeneratorSharesKeeperClock(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newStore(t, c.Endpoints())
	clk := fakeclock.New(t0)
	k, err := leasetest.StartKeeper(testCtx(t), lease.KeeperConfig{Store: s, Holder: "a", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var g *snowfence.Generator
	defer func() { k.Close(context.Background(), leasetest.Released(g)) }()
	g, err = snowfence.New(snowfence.Config{Lease: k, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	h := &holder{t: t, k: k, g: g, clk: clk}
	h.settle()
	h.issuing() // the claim's notice window, on the fake clock
	id, err := g.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := snowfence.V1().TimeOf(id), clk.Time(); !got.Equal(want) {
		t.Fatalf("ID timestamp %s, want the keeper's fake clock %s", got, want)
	}
}

// watchedStore counts the renewals it is sent, tells the test of each one
// the store acknowledged (on extended, if not nil), and fails every Extend
// and Get once down is set, as a store outage.
type watchedStore struct {
	lease.Store
	extended chan *lease.Lease
	down     atomic.Bool
	extends  atomic.Int64
}

func (s *watchedStore) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	s.extends.Add(1)
	if s.down.Load() {
		return nil, errors.New("store unavailable")
	}
	nl, err := s.Store.Extend(ctx, l, markMs, leaseFor)
	if err == nil && s.extended != nil {
		s.extended <- nl
	}
	return nl, err
}

func (s *watchedStore) Get(ctx context.Context, m int) (lease.Record, error) {
	if s.down.Load() {
		return lease.Record{}, errors.New("store unavailable")
	}
	return s.Store.Get(ctx, m)
}

// A forward step of the wall clock past the reserved mark (an NTP step, a
// VM resumed with its clock set) refuses callers at the mark until the
// keeper renews. The keeper sleeps on the monotonic clock, which did not
// move; it renews when the first caller reaches the mark — as soon as
// RenewEvery/4 has passed since its last renewal, the pace of its retries —
// not at its next renewal, RenewEvery away (10 s on the lease tables).
func TestKeeperRenewsAtOnceAfterForwardStep(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := &watchedStore{Store: newStore(t, c.Endpoints()), extended: make(chan *lease.Lease, 16)}
	clk := fakeclock.New(t0)
	const renewEvery = 2 * time.Second
	h := mustHolder(t, s, clk, "a", lease.Range{Lo: 9, Hi: 9}, func(kc *lease.KeeperConfig) {
		kc.LeaseFor, kc.RenewEvery, kc.SelfFence = 10*time.Second, renewEvery, 5*time.Second
	})
	h.mint(10)
	h.settle()
	for len(s.extended) > 0 {
		<-s.extended // the claim's first renewal
	}
	clk.Step(time.Hour)
	if _, err := h.g.Next(context.Background()); !isFenced(err) {
		t.Fatalf("an hour past the mark: err = %v, want ErrFenced (mark reached)", err)
	}
	if len(s.extended) > 0 {
		t.Fatal("renewed before RenewEvery/4 had passed since the last renewal")
	}
	h.settle()
	clk.Advance(renewEvery / 4)
	select {
	case l := <-s.extended:
		if now := clk.Now().WallMs; l.MarkMs <= now {
			t.Fatalf("renewal after the step: mark %d, not ahead of the clock %d", l.MarkMs, now)
		}
	case <-testCtx(t).Done():
		t.Fatal("no renewal after a caller reached the mark: the keeper waits for its next renewal on the monotonic clock")
	}
	h.settle() // the renewal published, the keeper asleep again
	for _, id := range h.mint(10) {
		if ts := snowfence.V1().TimeOf(id); ts.Before(t0.Add(time.Hour)) {
			t.Fatalf("ID %d at %s after the step, want an hour ahead of %s", id, ts, t0)
		}
	}
	if st := h.g.Stats(); st.Refused["fenced"] != 1 {
		t.Errorf("refusals: %+v, want the one call that reached the mark", st.Refused)
	}
}

// countingClock counts Sleep calls: here only the keeper's loop sleeps.
type countingClock struct {
	*fakeclock.Clock
	sleeps atomic.Int64
}

func (c *countingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeps.Add(1)
	return c.Clock.Sleep(ctx, d)
}

// Callers refused at the mark — after a forward step, or in a store outage
// that outlasted the reservation — wake the keeper once per grant, not once
// per call: with the clock frozen, 20,000 refused calls neither renew (the
// early renewal waits RenewEvery/4 after the last one) nor turn the loop
// more than once or twice.
func TestKeeperRefusedCallersDoNotSpinIt(t *testing.T) {
	for _, down := range []bool{false, true} {
		t.Run(map[bool]string{false: "forward step", true: "store down"}[down], func(t *testing.T) {
			c := etcdtest.Start(t, 1)
			s := &watchedStore{Store: newStore(t, c.Endpoints())}
			clk := &countingClock{Clock: fakeclock.New(t0)}
			h := mustHolder(t, s, clk.Clock, "a", lease.Range{Lo: 3, Hi: 3}, func(kc *lease.KeeperConfig) {
				kc.Clock = clk
				kc.LeaseFor, kc.RenewEvery, kc.SelfFence = 10*time.Second, 2*time.Second, 5*time.Second
			})
			h.mint(1)
			if down {
				// Renewals fail every RenewEvery/4 until the mark, the
				// lease's length ahead, has passed.
				s.down.Store(true)
				for range 24 {
					h.step(500 * time.Millisecond)
				}
			} else {
				clk.Step(time.Hour)
			}
			h.settle()
			sleeps, extends := clk.sleeps.Load(), s.extends.Load()
			const calls = 20_000
			for range calls {
				if _, err := h.g.Next(context.Background()); !isFenced(err) {
					t.Fatalf("err = %v, want fenced", err)
				}
			}
			h.settle()
			sleeps, extends = clk.sleeps.Load()-sleeps, s.extends.Load()-extends
			t.Logf("%d refused calls, clock frozen: the keeper slept %d times, the store saw %d renewals", calls, sleeps, extends)
			if extends > 0 {
				t.Errorf("%d renewals with the clock frozen: refused callers make the keeper renew", extends)
			}
			if sleeps > 2 {
				t.Errorf("the keeper's loop turned %d times for %d refused calls: it spins at the callers' rate", sleeps, calls)
			}
		})
	}
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
