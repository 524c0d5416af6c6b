package snowfence_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

// fakeKernel stands in for adjtimex: tests set the clock state the
// generator reads (Config.ClockStatus).
type fakeKernel struct {
	mu sync.Mutex
	st snowfence.ClockStatus
}

var synced = snowfence.ClockStatus{Synchronized: true, MaxError: time.Millisecond, EstimatedError: 100 * time.Microsecond}

func newKernel(st snowfence.ClockStatus) *fakeKernel { return &fakeKernel{st: st} }

func (k *fakeKernel) read() (snowfence.ClockStatus, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.st, nil
}

func (k *fakeKernel) set(st snowfence.ClockStatus) {
	k.mu.Lock()
	k.st = st
	k.mu.Unlock()
}

// newPolicyGen is a generator on a fake clock and a fake kernel with the
// zero ClockPolicy, after mutate.
func newPolicyGen(t *testing.T, k *fakeKernel, at time.Time, mutate func(*snowfence.Config)) (*snowfence.Generator, *fakeclock.Clock) {
	t.Helper()
	clk := fakeclock.New(at)
	cfg := snowfence.Config{Lease: snowfence.Static(37, 0), Clock: clk, ClockStatus: k.read}
	if mutate != nil {
		mutate(&cfg)
	}
	g, err := snowfence.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, clk
}

// refused checks that Next and Health both refuse with
// ErrClockUnsynchronized, and that the message says want.
func refused(t *testing.T, g *snowfence.Generator, when, want string) {
	t.Helper()
	if id, err := g.Next(context.Background()); !errors.Is(err, snowfence.ErrClockUnsynchronized) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: Next = %d, %v; want ErrClockUnsynchronized saying %q", when, id, err, want)
	}
	if h := g.Health(); h.Issuing || h.Reason != "clock-unsynchronized" || !strings.Contains(h.Detail, want) {
		t.Fatalf("%s: Health = %+v; want not issuing, clock-unsynchronized", when, h)
	}
}

// issues checks that Next and Health both issue.
func issues(t *testing.T, g *snowfence.Generator, when string) snowfence.ID {
	t.Helper()
	id, err := g.Next(context.Background())
	if err != nil {
		t.Fatalf("%s: Next: %v; want an ID", when, err)
	}
	if h := g.Health(); !h.Issuing {
		t.Fatalf("%s: Health = %+v; want issuing", when, h)
	}
	return id
}

// The zero ClockPolicy is ClockRequire: a library user who sets nothing
// gets a generator that refuses while the kernel reports the clock
// unsynchronised or its maximum error above the bound (5 ms, or
// MaxClockError), and issues again once it is back within it.
func TestClockPolicyZeroValueRequiresSync(t *testing.T) {
	k := newKernel(snowfence.ClockStatus{MaxError: 16 * time.Second}) // STA_UNSYNC, as after boot
	g, clk := newPolicyGen(t, k, start, nil)
	refused(t, g, "unsynchronized", "unsynchronized")

	k.set(snowfence.ClockStatus{Synchronized: true, MaxError: 6 * time.Millisecond})
	clk.Advance(time.Second) // the state is read at most once a second
	refused(t, g, "maximum error 6 ms", "maximum clock error 6ms exceeds 5ms")

	k.set(snowfence.ClockStatus{Synchronized: true, MaxError: 5 * time.Millisecond})
	clk.Advance(time.Second)
	issues(t, g, "maximum error 5 ms, the bound")

	// The bound is configurable.
	k.set(snowfence.ClockStatus{Synchronized: true, MaxError: 9 * time.Millisecond})
	g2, _ := newPolicyGen(t, k, start, func(c *snowfence.Config) { c.MaxClockError = 10 * time.Millisecond })
	issues(t, g2, "maximum error 9 ms under a 10 ms bound")
	g3, _ := newPolicyGen(t, k, start, nil)
	refused(t, g3, "maximum error 9 ms under the default bound", "exceeds 5ms")
}

// A forward jump of the wall clock (ahead of the monotonic clock by more
// than ForwardJumpThreshold) refuses under the default policy until the
// clock is back in sync: the kernel reports it synchronised within the
// bound at a reading taken ClockJumpSettle or more after the jump.
func TestClockRequireRefusesAForwardJumpUntilBackInSync(t *testing.T) {
	k := newKernel(synced)
	g, clk := newPolicyGen(t, k, start, nil)
	before := issues(t, g, "before the jump")

	clk.Step(900 * time.Millisecond) // within ForwardJumpThreshold (1 s): no jump
	issues(t, g, "after a 900 ms step")

	clk.Step(10 * time.Minute)
	refused(t, g, "just after a 10 min jump", "jumped 600000 ms ahead")
	clk.Advance(time.Minute)
	refused(t, g, "1 min after the jump, the kernel synchronised", "jumped")

	// The kernel flags the clock (a step through the kernel clears its
	// NTP state): still refused at the settle period's end.
	k.set(snowfence.ClockStatus{MaxError: 16 * time.Second})
	clk.Advance(time.Minute)
	refused(t, g, "2 min after the jump, the kernel unsynchronised", "unsynchronized")
	k.set(snowfence.ClockStatus{Synchronized: true, MaxError: 7 * time.Millisecond})
	clk.Advance(time.Second)
	refused(t, g, "the kernel synchronised, but 7 ms off", "exceeds 5ms")

	// Back in sync: synchronised within the bound, read after the settle
	// period.
	k.set(synced)
	clk.Advance(time.Second)
	after := issues(t, g, "back in sync")
	if after <= before {
		t.Fatalf("IDs not increasing: %d then %d", before, after)
	}
	if st := g.Stats(); st.ForwardJumps != 1 {
		t.Errorf("ForwardJumps = %d, want 1 (the 900 ms step is none)", st.ForwardJumps)
	}
}

// The settle period is ClockJumpSettle, and a second jump while one is
// pending restarts it.
func TestClockJumpSettleIsConfigurable(t *testing.T) {
	k := newKernel(synced)
	g, clk := newPolicyGen(t, k, start, func(c *snowfence.Config) { c.ClockJumpSettle = 10 * time.Second })
	issues(t, g, "before the jump")
	clk.Step(5 * time.Second)
	refused(t, g, "after the jump", "jumped 5000 ms")
	clk.Advance(9 * time.Second)
	refused(t, g, "9 s after", "jumped")
	clk.Step(2 * time.Second)
	refused(t, g, "a second jump, 9 s after the first", "jumped 7000 ms") // measured from before the first
	clk.Advance(9 * time.Second)
	refused(t, g, "9 s after the second jump", "jumped")
	clk.Advance(time.Second)
	issues(t, g, "10 s after the second jump")
}

// A jump undone — the wall clock stepped back to within
// ForwardJumpThreshold of where it was — is back in sync at once, and the
// IDs go on increasing (none was issued on the jumped clock).
func TestClockRequireForwardJumpUndone(t *testing.T) {
	k := newKernel(synced)
	g, clk := newPolicyGen(t, k, start, nil)
	before := issues(t, g, "before the jump")
	clk.Step(10 * time.Minute)
	refused(t, g, "after the jump", "jumped")
	clk.Advance(time.Second)
	clk.Step(-10*time.Minute + 500*time.Millisecond) // back, within the threshold
	after := issues(t, g, "the jump undone")
	if after <= before || snowfence.V1().TimeOf(after).After(start.Add(2*time.Second)) {
		t.Fatalf("after the jump undone: ID %d at %s, before it %d", after, snowfence.V1().TimeOf(after), before)
	}
}

// Under ClockWarn a forward jump issues (on the jumped clock), and Health
// warns until it is back in sync; under ClockOff nothing is read.
func TestClockWarnForwardJumpWarns(t *testing.T) {
	k := newKernel(synced)
	g, clk := newPolicyGen(t, k, start, func(c *snowfence.Config) { c.ClockPolicy = snowfence.ClockWarn })
	issues(t, g, "before")
	clk.Step(10 * time.Minute)
	issues(t, g, "after the jump")
	if h := g.Health(); !strings.Contains(strings.Join(h.Warnings, ";"), "issuing resumes when it is back in sync") {
		t.Errorf("Health = %+v, want a warning about the pending jump", h)
	}
	clk.Advance(2 * time.Minute)
	issues(t, g, "settled")
	if h := g.Health(); strings.Contains(strings.Join(h.Warnings, ";"), "issuing resumes when it is back in sync") {
		t.Errorf("Health = %+v, want the pending-jump warning gone", h)
	}
}
