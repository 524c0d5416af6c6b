package lease_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// The forward-jump fence (a keeper's grant refused after the wall clock ran
// ahead of the monotonic one by more than ForwardJumpThreshold, until a
// renewal sent after the jump), StartMono and checkSameMono, against the ways
// an adversarial review tried to get past them. The scenario of
// clock_step_restore_test.go: A holds machine 7 on a stub with etcd's (or the
// tables') windows, renewed just now; the store is restored to before A's
// claim and B, started at once, claims 7 and waits its notice floor; then A's
// clock misbehaves. Every test counts IDs issued twice.

// startHolderGen starts a holder as startHolder does, with the generator's
// Config adjusted by gen (its Lease and Clock set first).
func startHolderGen(t *testing.T, s lease.Store, clk *fakeclock.Clock, name string, rng lease.Range,
	gen func(*snowfence.Config), opts ...func(*lease.KeeperConfig)) (*holder, error) {
	t.Helper()
	kc := lease.KeeperConfig{Store: s, Holder: name, Range: &rng, Clock: clk}
	for _, o := range opts {
		o(&kc)
	}
	k, err := leasetest.StartKeeper(testCtx(t), kc)
	if err != nil {
		return nil, err
	}
	var g *snowfence.Generator
	t.Cleanup(func() { k.Close(context.Background(), leasetest.Released(g)) })
	gc := snowfence.Config{Lease: k, Clock: clk, ClockPolicy: snowfence.ClockOff}
	if gen != nil {
		gen(&gc)
	}
	g, err = snowfence.New(gc)
	if err != nil {
		return nil, err
	}
	h := &holder{t: t, k: k, g: g, clk: clk}
	h.settle()
	return h, nil
}

// mustHolderGen is startHolderGen, then issuing.
func mustHolderGen(t *testing.T, s lease.Store, clk *fakeclock.Clock, name string, rng lease.Range,
	gen func(*snowfence.Config), opts ...func(*lease.KeeperConfig)) *holder {
	t.Helper()
	h, err := startHolderGen(t, s, clk, name, rng, gen, opts...)
	if err != nil {
		t.Fatal(err)
	}
	h.issuing()
	return h
}

// restoreAndClaimB restores the stub and starts B on a clock of its own
// reading A's wall clock now; it returns B and B's claim instant.
func restoreAndClaimB(t *testing.T, s *stubStore, sb lease.Store, at time.Time, tables bool) (*holder, *fakeclock.Clock, int64) {
	t.Helper()
	s.restore()
	clkB := fakeclock.New(at)
	b, err := startHolder(t, sb, clkB, "b", lease.Range{Lo: 7, Hi: 7}, kindTimings(tables))
	if err != nil {
		t.Fatal(err)
	}
	return b, clkB, clkB.Now().WallMs
}

// TestJumpFenceWithRaisedThreshold: a generator configured with a raised
// ForwardJumpThreshold still mints none of the claimer's IDs after a 7 s
// step. ForwardJumpThreshold was a reporting knob (Stats, a log line,
// Health); it now also decides when the clock-jumped fence applies, and
// snowfence.New takes any value. A generator configured with
// ForwardJumpThreshold 30 s (say, to silence warnings on a VM whose clock is
// corrected often) never fenced on a 7 s step: the duplicates of
// TestForwardStepOfRunningHolderAfterRestore came back. Entry point
// snowfence.New on a keeper; etcd windows.
func TestJumpFenceWithRaisedThreshold(t *testing.T) {
	const step = 7 * time.Second
	s, _, sa, sb := restoreStores(false)
	clkA := fakeclock.New(t0)
	a, err := startHolderGen(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7},
		func(c *snowfence.Config) { c.ForwardJumpThreshold = 30 * time.Second }, kindTimings(false))
	if err != nil {
		t.Logf("New refused the raised threshold: %v", err)
		return
	}
	a.issuing()
	untilRenewed(a, clkA, a.step)
	a.mint(10)
	b, _, claimed := restoreAndClaimB(t, s, sb, clkA.Time(), false)
	clkA.Step(step)
	var aN, bN int
	for range int((step + 40*time.Second) / (250 * time.Millisecond)) {
		aN += tryMint(a, 100)
		bN += tryMint(b, 100)
		a.step(250 * time.Millisecond)
		b.step(250 * time.Millisecond)
	}
	t.Logf("a minted %d after the 7 s step (forward jumps seen: %d); b minted %d, first at claim+%d ms",
		aN, a.g.Stats().ForwardJumps, bN, firstAfter(b.ids, claimed))
	checkUnique(t, a.ids, b.ids)
}

// TestJumpFenceStepBeforeFirstID: a forward step before a generator's first
// ID is fenced like any other. The jump was once measured between two of the
// generator's own readings, and a generator that has issued nothing yet has
// none: a step before its first ID was never seen. A
// holds the number (claimed, notice window over, renewing) but has had no
// request yet — a quiet service — when the store is restored and B claims;
// A's wall clock is stepped 7 s forward; A's first requests come after. A
// stays connected (its next renewal, ≤ 2 s away, loses it). Entry point
// lease.StartKeeper + snowfence.New; etcd windows. Control: the same with
// one ID minted before the restore
// (TestForwardStepOfRunningHolderAfterRestore, held).
func TestJumpFenceStepBeforeFirstID(t *testing.T) {
	for _, c := range []struct {
		name      string
		mintFirst bool
	}{{"no ID before the step", false}, {"control: one ID before", true}} {
		t.Run(c.name, func(t *testing.T) {
			const step = 7 * time.Second
			s, _, sa, sb := restoreStores(false)
			clkA := fakeclock.New(t0)
			a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7}, kindTimings(false))
			untilRenewed(a, clkA, a.step)
			if c.mintFirst {
				a.mint(1)
			}
			b, _, claimed := restoreAndClaimB(t, s, sb, clkA.Time(), false)
			clkA.Step(step)
			var aN, bN int
			for range int((step + 20*time.Second) / (250 * time.Millisecond)) {
				aN += tryMint(a, 100)
				bN += tryMint(b, 100)
				a.step(250 * time.Millisecond)
				b.step(250 * time.Millisecond)
			}
			t.Logf("a minted %d after the step (forward jumps seen: %d); b minted %d, first at claim+%d ms",
				aN, a.g.Stats().ForwardJumps, bN, firstAfter(b.ids, claimed))
			checkUnique(t, a.ids, b.ids)
		})
	}
}

// TestJumpFenceRepeatedStepsUnderTheThreshold: steps each under the threshold
// add up and are fenced once their sum is over it. The jump was once judged
// pair by pair: (wall delta − mono delta) between two consecutive readings
// must exceed 1 s. A's wall clock is stepped 900 ms forward five times, a
// second apart (4.5 s in all), with A minting every 250 ms between — every
// pair of readings shows at most 900 ms, none is a jump. A is cut off (its
// renewals fail), so it issues until its 5 s self-fence, on a wall clock now
// 4.5 s ahead of B's: past B's 8 s floor. docs/design.md leaves wall clocks
// that disagree "without stepping" unprotected; these disagree by stepping.
// Entry point lease.StartKeeper; etcd windows. Control: one 4.5 s step (held:
// the fence).
func TestJumpFenceRepeatedStepsUnderTheThreshold(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps int
		each  time.Duration
	}{{"5 steps of 900 ms", 5, 900 * time.Millisecond}, {"control: 1 step of 4.5 s", 1, 4500 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			s, cs, sa, sb := restoreStores(false)
			clkA := fakeclock.New(t0)
			a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7}, kindTimings(false))
			untilRenewed(a, clkA, a.step)
			a.mint(10)
			cs.cut.Store(true)
			b, _, claimed := restoreAndClaimB(t, s, sb, clkA.Time(), false)
			var aN, bN, stepped int
			for i := range 80 { // 20 s
				if i%4 == 0 && stepped < c.steps {
					clkA.Step(c.each)
					stepped++
				}
				aN += tryMint(a, 100)
				bN += tryMint(b, 100)
				a.step(250 * time.Millisecond)
				b.step(250 * time.Millisecond)
			}
			t.Logf("a minted %d after the restore (forward jumps seen: %d, refusals %v); b minted %d, first at claim+%d ms",
				aN, a.g.Stats().ForwardJumps, a.g.Stats().Refused, bN, firstAfter(b.ids, claimed))
			checkUnique(t, a.ids, b.ids)
		})
	}
}

// TestJumpFenceShortSuspendsWithoutWatchdog: short suspends that add up
// leave a cut-off holder minting none of the claimer's IDs, with or without
// the keeper's boot watchdog. A host suspend shorter than
// ForwardJumpThreshold stops the monotonic clock without a jump being seen.
// Five suspends of 900 ms, a second apart, leave A's monotonic clock 4.5 s
// behind true time: its 5 s self-fence ends 9.5 s after its last renewal,
// and its wall clock (right: the kernel advanced it over each suspend)
// stamps timestamps past B's 8 s floor. With a Clock that is not a
// snowfence.SystemClock value — any caller's wrapper of it, node.Config's
// Generator.Clock that node.Start gives the keeper — the keeper runs no
// CLOCK_BOOTTIME watchdog (KeeperConfig.Boottime doc), and nothing else
// stops A. "watchdog": the same with the keeper's boot watchdog (simulated
// boot clock, real-time 200 ms ticker, polled for between steps), expected
// to hold. Entry point lease.StartKeeper; etcd windows; A cut off.
func TestJumpFenceShortSuspendsWithoutWatchdog(t *testing.T) {
	for _, c := range []struct {
		name     string
		watchdog bool
	}{{"no watchdog (caller's clock)", false}, {"watchdog", true}} {
		t.Run(c.name, func(t *testing.T) {
			const each = 900 * time.Millisecond
			s, cs, sa, sb := restoreStores(false)
			clkA := fakeclock.New(t0)
			var slept atomic.Int64
			opts := []func(*lease.KeeperConfig){kindTimings(false)}
			if c.watchdog {
				opts = append(opts, func(kc *lease.KeeperConfig) {
					kc.Boottime = func() time.Duration { return clkA.Now().Mono + time.Duration(slept.Load()) }
				})
			}
			a := mustHolder(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7}, opts...)
			untilRenewed(a, clkA, a.step)
			a.mint(10)
			cs.cut.Store(true)
			b, clkB, claimed := restoreAndClaimB(t, s, sb, clkA.Time(), false)
			var aN, bN, suspends int
			for i := range 80 {
				if i%4 == 0 && suspends < 5 {
					// A's host sleeps 900 ms: true time (B's clock) and
					// A's wall and boot clocks move on, A's monotonic
					// clock does not.
					slept.Add(int64(each))
					clkA.Step(each)
					b.step(each)
					suspends++
					if c.watchdog {
						time.Sleep(450 * time.Millisecond) // two of the watchdog's real-time ticks
					}
				}
				aN += tryMint(a, 100)
				bN += tryMint(b, 100)
				a.step(250 * time.Millisecond)
				b.step(250 * time.Millisecond)
				if c.watchdog && i%4 == 2 {
					time.Sleep(450 * time.Millisecond)
				}
			}
			t.Logf("a minted %d after the restore (forward jumps seen: %d, refusals %v); b minted %d, first at claim+%d ms; A's wall %s ahead of B's",
				aN, a.g.Stats().ForwardJumps, a.g.Stats().Refused, bN, firstAfter(b.ids, claimed), clkA.Time().Sub(clkB.Time()))
			checkUnique(t, a.ids, b.ids)
		})
	}
}

// lagClock is a caller's clock: the keeper's, with its monotonic reading
// lag behind (two snowfence.SystemClock values made lag apart read so).
type lagClock struct {
	*fakeclock.Clock
	lag time.Duration
}

func (c lagClock) Now() snowfence.Reading {
	r := c.Clock.Now()
	r.Mono -= c.lag
	return r
}

func (c lagClock) WaitUntil(ctx context.Context, wallMs int64) (snowfence.Reading, error) {
	r, err := c.Clock.WaitUntil(ctx, wallMs)
	r.Mono -= c.lag
	return r, err
}

// TestJumpFenceLaggingGeneratorClock: a generator clock lagging the keeper's
// (within what checkSameMono allows) does not lift the clock-jumped fence
// early. CheckSameMono lets a generator clock read up to 100 ms behind the
// keeper's monotonic clock (two SystemClock values made up to 100 ms apart:
// kc.Clock = snowfence.SystemClock(), then the generator's). The
// clock-jumped fence compares the keeper's RenewedAt with the generator's
// detection reading: with the generator 99 ms behind, a renewal sent up to
// 99 ms before the jump counts as sent after it. A's host suspends just
// after a renewal (TestSuspendedHolderResumesAfterRestore, no watchdog):
// after the suspend the first reading is "after" that renewal and the fence
// is lifted at once; A issues until its next renewal on the restored store
// fails. Control: lag 0 (held). Entry point snowfence.New on a keeper; etcd
// and the tables' windows.
func TestJumpFenceLaggingGeneratorClock(t *testing.T) {
	for _, c := range []struct {
		name    string
		tables  bool
		suspend time.Duration
		lag     time.Duration
	}{
		{"etcd/lag 4ms", false, 9 * time.Second, 4 * time.Millisecond},
		{"tables/lag 4ms", true, tableStep, 4 * time.Millisecond},
		{"etcd/control lag 0", false, 9 * time.Second, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _, sa, sb := restoreStores(c.tables)
			clkA := fakeclock.New(t0)
			a, err := startHolderGen(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7},
				func(gc *snowfence.Config) { gc.Clock = lagClock{clkA, c.lag} }, kindTimings(c.tables))
			if err != nil {
				t.Fatalf("New refused a generator clock %s behind: %v", c.lag, err)
			}
			a.issuing()
			untilRenewed(a, clkA, a.step)
			a.mint(10)
			ga, _ := a.k.Grant()
			b, clkB, claimed := restoreAndClaimB(t, s, sb, clkA.Time(), c.tables)
			for clkB.Time().Before(clkA.Time().Add(c.suspend)) {
				tryMint(b, 10)
				b.step(250 * time.Millisecond)
			}
			clkA.Step(c.suspend) // resumed: wall right, monotonic stopped
			if clkA.Now().WallMs >= ga.LimitMs {
				t.Fatalf("resumed past A's limit: the mark stops it")
			}
			var aN, bN int
			for range 60 {
				aN += tryMint(a, 100)
				bN += tryMint(b, 100)
				a.step(250 * time.Millisecond)
				b.step(250 * time.Millisecond)
			}
			t.Logf("after resuming at claim+%s: a minted %d (jumps seen %d, refusals %v), b %d (first at claim+%d ms)",
				c.suspend, aN, a.g.Stats().ForwardJumps, a.g.Stats().Refused, bN, firstAfter(b.ids, claimed))
			checkUnique(t, a.ids, b.ids)
		})
	}
}

// rateClock is a caller's clock whose monotonic reading agrees with the
// keeper's at the start and then runs at rate times its speed (a monotonic
// source other than the keeper's, such as CLOCK_MONOTONIC_RAW or a
// user-space estimate).
type rateClock struct {
	*fakeclock.Clock
	base time.Duration
	rate float64
}

func (c rateClock) Now() snowfence.Reading {
	r := c.Clock.Now()
	r.Mono = c.base + time.Duration(float64(r.Mono-c.base)*c.rate)
	return r
}

func (c rateClock) WaitUntil(ctx context.Context, wallMs int64) (snowfence.Reading, error) {
	if _, err := c.Clock.WaitUntil(ctx, wallMs); err != nil {
		return c.Now(), err
	}
	return c.Now(), nil
}

// TestJumpFenceDriftingGeneratorClock: a generator clock that drifts from
// the keeper's after New never delays the self-fence past the claimer's
// floor. CheckSameMono compares the two clocks once, at New. A generator
// clock whose monotonic reading starts equal to the keeper's and runs at
// half its rate passes; after a while its readings are far behind the
// keeper's RenewedAt, and the self-fence (generator reading − RenewedAt ≥
// SelfFence) never comes. A cut-off A issues until its mark. Entry point
// snowfence.New on a keeper; etcd windows.
func TestJumpFenceDriftingGeneratorClock(t *testing.T) {
	s, cs, sa, sb := restoreStores(false)
	clkA := fakeclock.New(t0)
	a, err := startHolderGen(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7},
		func(gc *snowfence.Config) { gc.Clock = rateClock{clkA, clkA.Now().Mono, 0.5} }, kindTimings(false))
	if err != nil {
		t.Logf("New refused the drifting clock: %v", err)
		return
	}
	a.issuing()
	for range 40 { // 10 s: the generator's clock is 5 s + behind
		a.step(250 * time.Millisecond)
	}
	untilRenewed(a, clkA, a.step)
	if heldByJumpFence(t, a) {
		return
	}
	cs.cut.Store(true)
	b, _, claimed := restoreAndClaimB(t, s, sb, clkA.Time(), false)
	var aN, bN int
	for range 80 {
		aN += tryMint(a, 100)
		bN += tryMint(b, 100)
		a.step(250 * time.Millisecond)
		b.step(250 * time.Millisecond)
	}
	t.Logf("a minted %d after the restore (refusals %v); b %d, first at claim+%d ms", aN, a.g.Stats().Refused, bN, firstAfter(b.ids, claimed))
	checkUnique(t, a.ids, b.ids)
}

// grantOnly is a caller's decorator of a keeper (for metrics, say) that
// forwards the grants and hides the rest: no schedule, clock or
// placements, and no binding.
type grantOnly struct{ v snowfence.LeaseView }

func (g grantOnly) GrantAt(wallMs int64) (*snowfence.Grant, error) { return g.v.GrantAt(wallMs) }
func (g grantOnly) MarkReached(gr *snowfence.Grant)                { g.v.MarkReached(gr) }
func (grantOnly) Schedule() snowfence.Schedule                     { return snowfence.Schedule{} }
func (grantOnly) Clock() snowfence.Clock                           { return nil }
func (grantOnly) Placements() []snowfence.Placement                { return nil }
func (grantOnly) Bind() error                                      { return nil }

// TestJumpFenceLeaseViewWrapperWithoutClock: a LeaseView wrapping the keeper
// that reports no clock still leaves the generator's self-fence on the
// keeper's clock. Snowfence.New checks the generator's clock against its
// Lease's Clock(); a LeaseView that wraps the keeper and reports no clock
// (against the LeaseView doc, which asks a lease whose grants self-fence for
// its clock) is not checked (checkSameClock is not run), and with
// Config.Clock nil the generator makes a SystemClock of its own — whose
// monotonic reading is the time since New, not since the keeper's clock was
// made. Here the generator's clock reads 8 s behind the keeper's (New called
// once the keeper issues, after its notice window): a cut-off A self-fences
// 8 s late, past B's floor. Entry point snowfence.New on a wrapped keeper;
// etcd windows.
func TestJumpFenceLeaseViewWrapperWithoutClock(t *testing.T) {
	s, cs, sa, sb := restoreStores(false)
	clkA := fakeclock.New(t0)
	a, err := startHolderGen(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7}, func(gc *snowfence.Config) {
		gc.Lease = grantOnly{gc.Lease}
		gc.Clock = lagClock{clkA, 8 * time.Second}
	}, kindTimings(false))
	if err != nil {
		t.Logf("New refused: %v", err)
		return
	}
	a.issuing()
	for range 80 { // the notice window's end on the generator's (late) clock
		if tryMint(a, 10) > 0 {
			break
		}
		a.step(250 * time.Millisecond)
	}
	untilRenewed(a, clkA, a.step)
	if heldByJumpFence(t, a) {
		return
	}
	cs.cut.Store(true)
	b, _, claimed := restoreAndClaimB(t, s, sb, clkA.Time(), false)
	var aN, bN int
	for range 80 {
		aN += tryMint(a, 100)
		bN += tryMint(b, 100)
		a.step(250 * time.Millisecond)
		b.step(250 * time.Millisecond)
	}
	t.Logf("a minted %d after the restore (refusals %v); b %d, first at claim+%d ms", aN, a.g.Stats().Refused, bN, firstAfter(b.ids, claimed))
	checkUnique(t, a.ids, b.ids)
}

// TestJumpFenceLaggingGeneratorClockWithWatchdog: a lagging generator clock
// with the keeper's boot watchdog mints none of the claimer's IDs after a
// suspend. The lag story of TestJumpFenceLaggingGeneratorClock with the
// keeper's boot watchdog (what two SystemClock values made < 100 ms apart
// get): the fence lifted by the pre-suspend renewal, A mints a batch on
// waking, as a busy server would, before the watchdog's next real-time tick
// — the duplicates of TestSuspendedHolderResumesAfterRestore, which the
// clock-jumped fence was to close. Control: lag 0. Entry point snowfence.New
// on a keeper; etcd windows.
func TestJumpFenceLaggingGeneratorClockWithWatchdog(t *testing.T) {
	for _, lag := range []time.Duration{4 * time.Millisecond, 0} {
		t.Run(lag.String(), func(t *testing.T) {
			const suspend = 9 * time.Second
			s, _, sa, sb := restoreStores(false)
			clkA := fakeclock.New(t0)
			var slept atomic.Int64
			a, err := startHolderGen(t, sa, clkA, "a", lease.Range{Lo: 7, Hi: 7},
				func(gc *snowfence.Config) { gc.Clock = lagClock{clkA, lag} }, kindTimings(false),
				func(kc *lease.KeeperConfig) {
					kc.Boottime = func() time.Duration { return clkA.Now().Mono + time.Duration(slept.Load()) }
				})
			if err != nil {
				t.Fatal(err)
			}
			a.issuing()
			untilRenewed(a, clkA, a.step)
			a.mint(10)
			b, clkB, claimed := restoreAndClaimB(t, s, sb, clkA.Time(), false)
			for clkB.Time().Before(clkA.Time().Add(suspend)) {
				tryMint(b, 10)
				b.step(250 * time.Millisecond)
			}
			slept.Add(int64(suspend))
			clkA.Step(suspend)
			aN := tryMint(a, 1000)
			bN := tryMint(b, 1000)
			var fe *snowfence.FencedError
			fenced := pollUntil(5*time.Second, 10*time.Millisecond, func() bool {
				_, err := a.g.Next(context.Background())
				return errors.As(err, &fe)
			})
			t.Logf("on waking: a minted %d, b %d (b first at claim+%d ms); fenced after: %v (%v)", aN, bN, firstAfter(b.ids, claimed), fenced, fe)
			checkUnique(t, a.ids, b.ids)
		})
	}
}

// heldByJumpFence reports whether a's generator refuses with clock-jumped
// (its clock's monotonic reading has drifted from the keeper's: the fence
// holds, and the story cannot mint to begin with); it mints 10 IDs
// otherwise, failing t on any other refusal.
func heldByJumpFence(t *testing.T, a *holder) bool {
	t.Helper()
	ids, err := a.g.NextN(context.Background(), 10)
	var fe *snowfence.FencedError
	if errors.As(err, &fe) && fe.Reason == "clock-jumped" {
		t.Logf("held: the generator refuses on this clock: %v", err)
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	a.ids = append(a.ids, ids...)
	return false
}
