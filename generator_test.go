package snowfence_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

// start is an arbitrary instant well inside v1's range.
var start = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

// lease is a LeaseView whose grant a test can swap: it has no schedule,
// clock or placements of its own, binds any number of generators, and
// records the grants the generator reported reached (MarkReached).
type lease struct {
	mu      sync.Mutex
	g       *snowfence.Grant
	err     error
	reached []*snowfence.Grant
}

func (l *lease) GrantAt(int64) (*snowfence.Grant, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.g, l.err
}

func (l *lease) Schedule() snowfence.Schedule      { return snowfence.Schedule{} }
func (l *lease) Clock() snowfence.Clock            { return nil }
func (l *lease) Placements() []snowfence.Placement { return nil }
func (l *lease) Bind() error                       { return nil }

func (l *lease) MarkReached(g *snowfence.Grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reached = append(l.reached, g)
}

// reports returns the grants reported reached so far.
func (l *lease) reports() []*snowfence.Grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*snowfence.Grant(nil), l.reached...)
}

func (l *lease) set(g *snowfence.Grant, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.g, l.err = g, err
}

// newGen returns a generator on a frozen fake clock with machine 37 and no
// fence, after applying mutate to its config.
func newGen(t *testing.T, mutate func(*snowfence.Config)) (*snowfence.Generator, *fakeclock.Clock) {
	t.Helper()
	clk := fakeclock.New(start)
	cfg := snowfence.Config{
		Lease:       snowfence.Static(37, 0),
		Clock:       clk,
		ClockPolicy: snowfence.ClockOff,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	g, err := snowfence.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, clk
}

func next(t *testing.T, g *snowfence.Generator) snowfence.ID {
	t.Helper()
	id, err := g.Next(context.Background())
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return id
}

// async runs Next in a goroutine and returns a channel with its result.
type result struct {
	id  snowfence.ID
	err error
}

func async(g *snowfence.Generator) <-chan result {
	ch := make(chan result, 1)
	go func() {
		id, err := g.Next(context.Background())
		ch <- result{id, err}
	}()
	return ch
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSmallStepBackIsWaitedOut(t *testing.T) {
	g, clk := newGen(t, nil)
	first := next(t, g)
	clk.Step(-3 * time.Millisecond)
	done := async(g)
	if err := clk.BlockUntilWaiters(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		t.Fatalf("Next returned %d, %v before the clock caught up", r.id, r.err)
	default:
	}
	clk.Advance(3 * time.Millisecond)
	r := <-done
	if r.err != nil || r.id <= first {
		t.Fatalf("after the wait: %d, %v; want an ID above %d", r.id, r.err, first)
	}
	if s := g.Stats(); s.BackwardWaits != 1 || s.BackwardSteps != 0 {
		t.Errorf("stats = %+v, want one backward wait and no refused step", s)
	}
}

func TestLargeStepBackIsRefused(t *testing.T) {
	for _, step := range []time.Duration{6 * time.Millisecond, 40 * time.Millisecond, 280 * time.Millisecond} {
		t.Run(step.String(), func(t *testing.T) {
			g, clk := newGen(t, nil)
			clk.Advance(280 * time.Millisecond)
			first := next(t, g)
			clk.Step(-step)
			_, err := g.Next(context.Background())
			var cbe *snowfence.ClockBackwardsError
			if !errors.As(err, &cbe) || !errors.Is(err, snowfence.ErrClockBackwards) {
				t.Fatalf("Next err = %v, want *ClockBackwardsError", err)
			}
			if cbe.Step != step {
				t.Errorf("Step = %s, want %s", cbe.Step, step)
			}
			if want := "by " + step.String()[:len(step.String())-2] + " ms"; !strings.Contains(err.Error(), want) {
				t.Errorf("message %q does not say %q", err, want)
			}
			if h := g.Health(); h.Issuing || h.Reason != "clock-backwards" {
				t.Errorf("Health = %+v, want refusing for clock-backwards", h)
			}
			// Still behind (by less than before, more than the wait): refused.
			clk.Advance(step - 6*time.Millisecond)
			if _, err := g.Next(context.Background()); !errors.Is(err, snowfence.ErrClockBackwards) {
				t.Errorf("6 ms behind: err = %v, want ErrClockBackwards", err)
			}
			// Back where it was: healthy again, and the refused calls
			// changed nothing, so the sequence goes on from the first ID.
			clk.Advance(6 * time.Millisecond)
			if h := g.Health(); !h.Issuing {
				t.Errorf("Health after recovery = %+v", h)
			}
			if got := next(t, g); got != first+1 {
				t.Errorf("after recovery Next = %d, want %d (same tick, next sequence)", got, first+1)
			}
			if s := g.Stats(); s.BackwardSteps != 1 || s.Refused["clock-backwards"] != 2 || s.Issued != 2 {
				t.Errorf("stats = %+v, want 1 step episode, 2 refusals, 2 issued", s)
			}
		})
	}
}

func TestForwardJumpIsReported(t *testing.T) {
	g, clk := newGen(t, nil)
	first := next(t, g)
	clk.Step(10 * time.Minute)
	second := next(t, g)
	if second <= first {
		t.Fatalf("IDs not increasing across the jump: %d then %d", first, second)
	}
	if got := snowfence.V1().TimeOf(second); !got.Equal(start.Add(10 * time.Minute)) {
		t.Errorf("timestamp after the jump = %s", got)
	}
	if s := g.Stats(); s.ForwardJumps != 1 {
		t.Errorf("ForwardJumps = %d, want 1", s.ForwardJumps)
	}
	h := g.Health()
	if !h.Issuing || len(h.Warnings) == 0 || !strings.Contains(strings.Join(h.Warnings, ";"), "jumped forward") {
		t.Errorf("Health = %+v, want issuing with a forward-jump warning", h)
	}
	// Ordinary passage of time is no jump.
	clk.Advance(5 * time.Second)
	next(t, g)
	if s := g.Stats(); s.ForwardJumps != 1 {
		t.Errorf("ForwardJumps after normal time = %d, want 1", s.ForwardJumps)
	}
}

func TestSequenceExhaustionWaitsForNextMillisecond(t *testing.T) {
	g, clk := newGen(t, nil)
	var last snowfence.ID
	for i := 0; i < 4096; i++ {
		id := next(t, g)
		if i > 0 && id != last+1 {
			t.Fatalf("ID %d = %d, want %d", i, id, last+1)
		}
		last = id
	}
	if f := snowfence.V1().Split(last); f.Sequence != 4095 {
		t.Fatalf("4,096th ID has sequence %d", f.Sequence)
	}
	done := async(g)
	if err := clk.BlockUntilWaiters(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		t.Fatalf("4,097th ID returned within the same millisecond: %d, %v", r.id, r.err)
	default:
	}
	clk.Advance(time.Millisecond)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	f := snowfence.V1().Split(r.id)
	if f.Sequence != 0 || !snowfence.V1().TimeOf(r.id).Equal(start.Add(time.Millisecond)) {
		t.Errorf("4,097th ID = %+v at %s, want sequence 0 in the next millisecond", f, snowfence.V1().TimeOf(r.id))
	}
	if s := g.Stats(); s.SequenceWaits != 1 || s.Issued != 4097 {
		t.Errorf("stats = %+v", s)
	}
}

func TestTenMillisecondUnit(t *testing.T) {
	sony := snowfence.Layout{Name: "sonyflake-like", Epoch: snowfence.V1().Epoch, Unit: 10 * time.Millisecond, TimeBits: 39, MachineBits: 16, SequenceBits: 8}
	g, clk := newGen(t, func(c *snowfence.Config) {
		c.Schedule = snowfence.MustSchedule(snowfence.Step{Layout: sony})
		c.Lease = snowfence.Static(40000, 0)
	})
	ids, err := g.NextN(context.Background(), 256)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(9 * time.Millisecond) // same 10 ms tick
	done := async(g)
	if err := clk.BlockUntilWaiters(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
	r := <-done
	f := sony.Split(r.id)
	if r.err != nil || r.id <= ids[255] || f.Sequence != 0 || f.Machine != 40000 || f.Tick != sony.Split(ids[0]).Tick+1 {
		t.Fatalf("257th ID = %d (%+v), %v", r.id, f, r.err)
	}
}

func TestNextN(t *testing.T) {
	g, clk := newGen(t, nil)
	if _, err := g.NextN(context.Background(), 4000); !errors.Is(err, snowfence.ErrInvalidCount) {
		t.Fatalf("NextN(4000) err = %v", err)
	}
	for _, n := range []int{0, -1, 1001} {
		if _, err := g.NextN(context.Background(), n); !errors.Is(err, snowfence.ErrInvalidCount) {
			t.Errorf("NextN(%d) err = %v, want ErrInvalidCount", n, err)
		}
	}
	ids, err := g.NextN(context.Background(), 1000)
	if err != nil || len(ids) != 1000 {
		t.Fatalf("NextN(1000) = %d IDs, %v", len(ids), err)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			t.Fatalf("ids[%d] = %d after %d", i, ids[i], ids[i-1])
		}
	}
	// 4,000 of 4,096 used: a batch of 1,000 takes the last 96 and
	// spills into the next millisecond after waiting for it.
	for i := 0; i < 3; i++ {
		if _, err := g.NextN(context.Background(), 1000); err != nil {
			t.Fatal(err)
		}
	}
	type batch struct {
		ids []snowfence.ID
		err error
	}
	done := make(chan batch, 1)
	go func() {
		ids, err := g.NextN(context.Background(), 1000)
		done <- batch{ids, err}
	}()
	if err := clk.BlockUntilWaiters(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
	b := <-done
	if b.err != nil || len(b.ids) != 1000 {
		t.Fatalf("spilling batch: %d IDs, %v", len(b.ids), b.err)
	}
	v1 := snowfence.V1()
	for i := 1; i < 1000; i++ {
		if b.ids[i] <= b.ids[i-1] {
			t.Fatalf("batch not increasing at %d", i)
		}
	}
	if f := v1.Split(b.ids[95]); f.Sequence != 4095 {
		t.Errorf("96th ID of the spilling batch has sequence %d, want 4095", f.Sequence)
	}
	if f := v1.Split(b.ids[96]); f.Sequence != 0 || !v1.TimeOf(b.ids[96]).Equal(start.Add(time.Millisecond)) {
		t.Errorf("97th ID = %+v, want sequence 0 in the next millisecond", f)
	}
}

func TestFenced(t *testing.T) {
	l := &lease{}
	g, clk := newGen(t, func(c *snowfence.Config) { c.Lease = l })
	now := start.UnixMilli()

	if _, err := g.Next(context.Background()); !isFenced(err, "no-lease") {
		t.Fatalf("no grant: err = %v", err)
	}
	l.set(&snowfence.Grant{Machine: 5, Token: 1, StartMs: now, LimitMs: now + 10, RenewedAt: clk.Now().Mono, RenewedWallMs: clk.Now().WallMs, SelfFence: 5 * time.Second}, nil)
	first := next(t, g)

	clk.Advance(10 * time.Millisecond) // now == LimitMs: the mark is reached
	if _, err := g.Next(context.Background()); !isFenced(err, "mark-reached") {
		t.Fatalf("at the mark: err = %v", err)
	}
	if h := g.Health(); h.Issuing || h.Reason != "fenced" || h.UntilFence != 0 {
		t.Errorf("Health = %+v, want fenced with 0 until fence", h)
	}
	// The keeper extends the mark: issuing resumes.
	l.set(&snowfence.Grant{Machine: 5, Token: 1, StartMs: now, LimitMs: now + 5000, RenewedAt: clk.Now().Mono, RenewedWallMs: clk.Now().WallMs, SelfFence: 5 * time.Second}, nil)
	second := next(t, g)
	if second <= first {
		t.Fatalf("IDs not increasing: %d then %d", first, second)
	}
	// No acknowledged renewal for 5 s on the monotonic clock: refused,
	// even though the wall clock was stepped back well inside the mark.
	clk.Advance(5 * time.Second)
	clk.Step(-4 * time.Second)
	if _, err := g.Next(context.Background()); !isFenced(err, "renewal-overdue") {
		t.Fatalf("renewal overdue: err = %v", err)
	}
	l.set(nil, errors.New("lease on machine 5 lost: taken over by another holder"))
	_, err := g.Next(context.Background())
	if !isFenced(err, "no-lease") || !strings.Contains(err.Error(), "taken over") {
		t.Fatalf("lost lease: err = %v", err)
	}
	if s := g.Stats(); s.Issued != 2 || s.Refused["fenced"] != 4 {
		t.Errorf("stats = %+v, want 2 issued and 4 fenced refusals", s)
	}
}

// The generator tells its lease when a call is refused at or past a
// grant's limit (MarkReached), so that a keeper can renew before its next
// scheduled renewal — also when an earlier check refuses first, as the
// clock-jumped fence does after a forward step — and never on a call that
// issues: reading the grant (GrantAt) is all an issuing call does to its
// lease.
func TestRefusalAtTheMarkTellsTheLease(t *testing.T) {
	l := &lease{}
	g, clk := newGen(t, func(c *snowfence.Config) { c.Lease = l })
	now := start.UnixMilli()
	gr := &snowfence.Grant{Machine: 5, Token: 1, StartMs: now, LimitMs: now + 10, RenewedAt: clk.Now().Mono, RenewedWallMs: now, SelfFence: 5 * time.Second}
	l.set(gr, nil)
	for range 9 {
		next(t, g)
		clk.Advance(time.Millisecond)
	}
	if r := l.reports(); len(r) != 0 {
		t.Fatalf("calls below the limit reported the mark reached %d times", len(r))
	}
	clk.Advance(time.Millisecond) // now == LimitMs
	if _, err := g.Next(context.Background()); !isFenced(err, "mark-reached") {
		t.Fatalf("at the mark: err = %v", err)
	}
	if r := l.reports(); len(r) != 1 || r[0] != gr {
		t.Fatalf("refused at the mark: reports %v, want the grant once", r)
	}
	// A forward step past the mark: the clock-jumped fence refuses first,
	// and the lease is told all the same.
	gr2 := &snowfence.Grant{Machine: 5, Token: 1, StartMs: now, LimitMs: now + 5000, RenewedAt: clk.Now().Mono, RenewedWallMs: clk.Now().WallMs, SelfFence: 5 * time.Second}
	l.set(gr2, nil)
	next(t, g)
	clk.Step(time.Hour)
	if _, err := g.Next(context.Background()); !isFenced(err, "clock-jumped") {
		t.Fatalf("an hour past the mark: err = %v, want clock-jumped", err)
	}
	if r := l.reports(); len(r) != 2 || r[1] != gr2 {
		t.Fatalf("refused an hour past the mark: reports %v, want the new grant", r)
	}
}

func TestLeaseStartAboveMark(t *testing.T) {
	l := &lease{}
	g, clk := newGen(t, func(c *snowfence.Config) { c.Lease = l })
	now := start.UnixMilli()
	l.set(&snowfence.Grant{Machine: 5, Token: 1, StartMs: now + 3, LimitMs: now + 10000, RenewedAt: clk.Now().Mono}, nil)
	done := async(g)
	if err := clk.BlockUntilWaiters(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Millisecond)
	if r := <-done; r.err != nil || !snowfence.V1().TimeOf(r.id).Equal(start.Add(3*time.Millisecond)) {
		t.Fatalf("first ID %d at %s, %v; want at the lease start", r.id, snowfence.V1().TimeOf(r.id), r.err)
	}
	// A mark far ahead of this clock is refused rather than waited for.
	l.set(&snowfence.Grant{Machine: 6, Token: 2, StartMs: now + 60000, LimitMs: now + 90000, RenewedAt: clk.Now().Mono}, nil)
	if _, err := g.Next(context.Background()); !isFenced(err, "not-started") {
		t.Fatalf("start 60 s ahead: err = %v", err)
	}
}

func TestNewNumberKeepsIncreasing(t *testing.T) {
	l := &lease{}
	g, clk := newGen(t, func(c *snowfence.Config) { c.Lease = l })
	now := start.UnixMilli()
	l.set(&snowfence.Grant{Machine: 900, Token: 1, StartMs: now, LimitMs: now + 10000, RenewedAt: clk.Now().Mono}, nil)
	a := next(t, g)
	l.set(&snowfence.Grant{Machine: 3, Token: 2, StartMs: now, LimitMs: now + 10000, RenewedAt: clk.Now().Mono}, nil)
	done := async(g)
	if err := clk.BlockUntilWaiters(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
	r := <-done
	if r.err != nil || r.id <= a || snowfence.V1().Split(r.id).Machine != 3 {
		t.Fatalf("after switching to machine 3: %d (%+v), %v; want above %d", r.id, snowfence.V1().Split(r.id), r.err, a)
	}
}

func isFenced(err error, reason string) bool {
	var fe *snowfence.FencedError
	return errors.Is(err, snowfence.ErrFenced) && errors.As(err, &fe) && fe.Reason == reason
}

func TestRefusedCallChangesNothing(t *testing.T) {
	l := &lease{}
	g, clk := newGen(t, func(c *snowfence.Config) {
		c.Lease = l
		c.ClockPolicy = snowfence.ClockRequire
		c.ClockStatus = func() (snowfence.ClockStatus, error) {
			return snowfence.ClockStatus{Synchronized: true, MaxError: time.Millisecond}, nil
		}
	})
	now := start.UnixMilli()
	grant := &snowfence.Grant{Machine: 5, Token: 1, StartMs: now, LimitMs: now + 100, RenewedAt: clk.Now().Mono}
	l.set(grant, nil)
	first := next(t, g)
	before := g.LastIssued()
	// Every kind of refusal in turn, each undone before the next.
	refusals := []struct {
		name  string
		do    func()
		undo  func()
		match error
	}{
		{"clock back 40 ms", func() { clk.Step(-40 * time.Millisecond) }, func() { clk.Step(40 * time.Millisecond) }, snowfence.ErrClockBackwards},
		{"lease lost", func() { l.set(nil, errors.New("lost")) }, func() { l.set(grant, nil) }, snowfence.ErrFenced},
		{"mark reached", func() { clk.Step(200 * time.Millisecond) }, func() { clk.Step(-200 * time.Millisecond) }, snowfence.ErrFenced},
	}
	for _, r := range refusals {
		r.do()
		if _, err := g.Next(context.Background()); !errors.Is(err, r.match) {
			t.Fatalf("%s: err = %v, want %v", r.name, err, r.match)
		}
		if _, err := g.NextN(context.Background(), 10); !errors.Is(err, r.match) {
			t.Fatalf("%s: NextN err = %v, want %v", r.name, err, r.match)
		}
		r.undo()
		if got := g.LastIssued(); got != before {
			t.Fatalf("%s changed the issue state: LastIssued %d -> %d", r.name, before, got)
		}
	}
	if got := next(t, g); got != first+1 {
		t.Errorf("after refusals Next = %d, want %d", got, first+1)
	}
}

func TestClockPolicy(t *testing.T) {
	unsynced := func() (snowfence.ClockStatus, error) {
		return snowfence.ClockStatus{Synchronized: false, MaxError: 16 * time.Second}, nil
	}
	g, _ := newGen(t, func(c *snowfence.Config) { c.ClockPolicy = snowfence.ClockRequire; c.ClockStatus = unsynced })
	if _, err := g.Next(context.Background()); !errors.Is(err, snowfence.ErrClockUnsynchronized) {
		t.Errorf("require + unsynced: err = %v", err)
	}
	if h := g.Health(); h.Issuing || h.Reason != "clock-unsynchronized" {
		t.Errorf("Health = %+v", h)
	}
	drifting := func() (snowfence.ClockStatus, error) {
		return snowfence.ClockStatus{Synchronized: true, MaxError: 9 * time.Millisecond}, nil
	}
	g, _ = newGen(t, func(c *snowfence.Config) { c.ClockPolicy = snowfence.ClockRequire; c.ClockStatus = drifting })
	if _, err := g.Next(context.Background()); !errors.Is(err, snowfence.ErrClockUnsynchronized) {
		t.Errorf("require + 9 ms max error: err = %v", err)
	}
	g, _ = newGen(t, func(c *snowfence.Config) { c.ClockPolicy = snowfence.ClockWarn; c.ClockStatus = unsynced })
	next(t, g)
	if h := g.Health(); !h.Issuing || len(h.Warnings) == 0 {
		t.Errorf("warn + unsynced: Health = %+v, want issuing with a warning", h)
	}
	if _, err := snowfence.ParseClockPolicy("sometimes"); !errors.Is(err, snowfence.ErrInvalidConfig) {
		t.Errorf("ParseClockPolicy err = %v", err)
	}
}

func TestLayoutEnd(t *testing.T) {
	g, clk := newGen(t, nil)
	clk.Set(mustTime(t, "2095-09-07T15:47:35.551Z"))
	id := next(t, g)
	if got := snowfence.V1().TimeOf(id); !got.Equal(snowfence.V1().LastInstant()) {
		t.Errorf("last ID at %s", got)
	}
	if h := g.Health(); !strings.Contains(strings.Join(h.Warnings, ";"), "runs out at 2095-09-07T15:47:35.551Z") {
		t.Errorf("no exhaustion warning: %+v", h)
	}
	clk.Advance(time.Millisecond)
	_, err := g.Next(context.Background())
	if !errors.Is(err, snowfence.ErrLayoutExhausted) || !strings.Contains(err.Error(), "2095-09-07T15:47:35.551Z") {
		t.Fatalf("past the last instant: err = %v", err)
	}
	g, clk = newGen(t, nil)
	if h := g.Health(); len(h.Warnings) != 0 {
		t.Errorf("2026 warnings: %v", h.Warnings)
	}
	// A generator started in 2091 (setting the clock of the one above
	// would be a forward jump, which Health reports too).
	g, _ = newGen(t, func(c *snowfence.Config) { c.Clock = fakeclock.New(mustTime(t, "2091-01-01T00:00:00Z")) })
	if h := g.Health(); len(h.Warnings) != 1 {
		t.Errorf("2091: want one warning, got %v", h.Warnings)
	}
}

func TestScheduledCutover(t *testing.T) {
	sched, _ := snowfence.ParseSchedule("v1,v2@2028-01-01T00:00:00Z")
	cut := mustTime(t, "2028-01-01T00:00:00Z")

	// Machine 600 fits v1's 10 bits but not v2's 9. Static tells New its
	// number, and New refuses it at once: v2 will be in force.
	if _, err := snowfence.New(snowfence.Config{Schedule: sched, Lease: snowfence.Static(600, 0), Clock: fakeclock.New(start), ClockPolicy: snowfence.ClockOff}); !errors.Is(err, snowfence.ErrPlacement) || !errors.Is(err, snowfence.ErrInvalidConfig) {
		t.Fatalf("Static(600, 0) under v1,v2: err = %v, want ErrPlacement and ErrInvalidConfig", err)
	}
	// A LeaseView that does not tell its placement is checked on the grant:
	// refused from the cutover.
	g, clk := newGen(t, func(c *snowfence.Config) {
		c.Schedule = sched
		c.Lease = &lease{g: &snowfence.Grant{Machine: 600, Token: 1, LimitMs: math.MaxInt64}}
	})
	clk.Set(cut.Add(-time.Millisecond))
	next(t, g)
	clk.Advance(time.Millisecond)
	if _, err := g.Next(context.Background()); !errors.Is(err, snowfence.ErrNoLayout) || !strings.Contains(err.Error(), "v2") {
		t.Fatalf("machine 600 at the v2 cutover: err = %v", err)
	}

	// Machine 170, region 0 fits both: IDs switch layouts and keep increasing.
	g, clk = newGen(t, func(c *snowfence.Config) { c.Schedule = sched; c.Lease = snowfence.Static(170, 0) })
	clk.Set(cut.Add(-time.Millisecond))
	a := next(t, g)
	clk.Advance(time.Millisecond)
	b := next(t, g)
	da, _ := sched.Decode(a)
	db, _ := sched.Decode(b)
	if b <= a || da.Layout != "v1" || db.Layout != "v2" || db.RegionNumber != 0 || db.Machine != 170 || da.Machine != 170 {
		t.Fatalf("across the cutover: %d %+v then %d %+v", a, da, b, db)
	}

	// Region 2 has no place in v1: a holder of region 2 started before the
	// cutover is refused by New, and one started after it mints v2 IDs
	// with its region; if its clock steps back before the cutover, the
	// generator refuses rather than write a v1 ID without the region.
	if _, err := snowfence.New(snowfence.Config{Schedule: sched, Lease: snowfence.Static(170, 2), Clock: fakeclock.New(cut.Add(-time.Millisecond)), ClockPolicy: snowfence.ClockOff}); !errors.Is(err, snowfence.ErrPlacement) {
		t.Fatalf("Static(170, 2) before the cutover: err = %v, want ErrPlacement", err)
	}
	clk = fakeclock.New(cut)
	g, err := snowfence.New(snowfence.Config{Schedule: sched, Lease: snowfence.Static(170, 2), Clock: clk, ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatalf("Static(170, 2) from the cutover on: %v", err)
	}
	clk.Set(cut.Add(-time.Millisecond))
	if id, err := g.Next(context.Background()); !errors.Is(err, snowfence.ErrNoLayout) || !strings.Contains(err.Error(), "no region bits") {
		d, _ := sched.Decode(id)
		t.Fatalf("region 2 with the clock before the cutover: %d %+v, %v; want ErrNoLayout (v1 has no region bits)", id, d, err)
	}
	clk.Set(cut)
	c := next(t, g)
	if dc, _ := sched.Decode(c); dc.Layout != "v2" || dc.RegionNumber != 2 || dc.Machine != 170 {
		t.Fatalf("region 2 after the cutover: %d %+v", c, dc)
	}
}

func TestContextCancelDuringWait(t *testing.T) {
	g, clk := newGen(t, nil)
	next(t, g)
	clk.Step(-3 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := g.Next(ctx); done <- err }()
	if err := clk.BlockUntilWaiters(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := snowfence.New(snowfence.Config{}); !errors.Is(err, snowfence.ErrInvalidConfig) {
		t.Errorf("no lease: err = %v", err)
	}
	if _, err := snowfence.New(snowfence.Config{Lease: snowfence.Static(1, 0), ClockPolicy: "maybe"}); !errors.Is(err, snowfence.ErrInvalidConfig) {
		t.Errorf("bad policy: err = %v", err)
	}
	g, _ := newGen(t, nil)
	g.Close()
	if _, err := g.Next(context.Background()); !errors.Is(err, snowfence.ErrClosed) {
		t.Errorf("closed: err = %v", err)
	}
}

// 8 goroutines × 100,000 IDs on the real clock: no duplicate, and each
// goroutine sees its IDs strictly increase.
func TestConcurrentUniqueAndIncreasing(t *testing.T) {
	g, err := snowfence.New(snowfence.Config{Lease: snowfence.Static(37, 0), ClockPolicy: snowfence.ClockOff})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 100_000
	out := make([][]snowfence.ID, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]snowfence.ID, 0, each)
			for len(ids) < each {
				if w%2 == 0 {
					id, err := g.Next(context.Background())
					if err != nil {
						return
					}
					ids = append(ids, id)
					continue
				}
				var err error
				ids, err = g.AppendN(context.Background(), ids, min(37, each-len(ids)))
				if err != nil {
					return
				}
			}
			out[w] = ids
		}()
	}
	wg.Wait()
	seen := make(map[snowfence.ID]int, workers*each)
	for w, ids := range out {
		if len(ids) != each {
			t.Fatalf("worker %d got %d IDs, want %d", w, len(ids), each)
		}
		for i, id := range ids {
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("worker %d: ID %d = %d not above %d", w, i, id, ids[i-1])
			}
			if other, dup := seen[id]; dup {
				t.Fatalf("duplicate %d from workers %d and %d", id, other, w)
			}
			seen[id] = w
		}
	}
	if len(seen) != workers*each || g.Stats().Issued != workers*each {
		t.Fatalf("%d distinct IDs, %d issued; want %d", len(seen), g.Stats().Issued, workers*each)
	}
}

// Health says how long a lease not yet started has before its first ID
// (a claim's notice window: the wall-clock start and the monotonic one,
// the later), and nothing once it has started: the page of a holder in
// its notice window counted down to the fence instead, while it said "Not
// issuing".
func TestHealthUntilStart(t *testing.T) {
	l := &lease{}
	g, clk := newGen(t, func(c *snowfence.Config) { c.Lease = l })
	now := start.UnixMilli()
	r := clk.Now()
	l.set(&snowfence.Grant{Machine: 6, Token: 2, StartMs: now + 8000, StartMono: r.Mono + 9*time.Second, LimitMs: now + 90000, RenewedAt: r.Mono}, nil)
	h := g.Health()
	if h.Issuing || h.UntilStart != 9*time.Second {
		t.Fatalf("before the start: issuing %v, UntilStart %v; want not issuing, 9s (the monotonic start, the later)", h.Issuing, h.UntilStart)
	}
	l.set(&snowfence.Grant{Machine: 6, Token: 2, StartMs: now + 8000, StartMono: r.Mono + 7*time.Second, LimitMs: now + 90000, RenewedAt: r.Mono}, nil)
	if h := g.Health(); h.UntilStart != 8*time.Second {
		t.Fatalf("wall-clock start the later: UntilStart %v, want 8s", h.UntilStart)
	}
	clk.Advance(8 * time.Second)
	if h := g.Health(); !h.Issuing || h.UntilStart != 0 || !h.HasFence {
		t.Fatalf("once started: issuing %v, UntilStart %v, HasFence %v; want issuing, 0, a fence", h.Issuing, h.UntilStart, h.HasFence)
	}
}
