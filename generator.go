package snowfence

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"
)

// MaxBatch is the largest count NextN takes.
const MaxBatch = 1000

// Config configures a Generator. The zero value of every field but Lease is a
// working default.
type Config struct {
	// Lease supplies the machine number and the fence. Required: use a
	// lease.Keeper, or Static for a number assigned by hand. New refuses a
	// machine range or region of its Placements that a layout of the
	// schedule in force from now on cannot hold, and binds the generator
	// to it (LeaseView.Bind): a keeper feeds one generator only, and a
	// second New on it fails with ErrLeaseBound.
	Lease LeaseView
	// Schedule is the layout schedule. Zero means the Lease's (a
	// lease.Keeper claims its numbers with one, and a non-zero Schedule
	// here must equal it), else DefaultSchedule (v1).
	Schedule Schedule
	// Clock is the source of time. Nil means the Lease's (a lease.Keeper
	// times its grants on one, and the two must share it: a Clock here
	// that does not read as the Lease's is refused with ErrInvalidConfig),
	// else SystemClock().
	Clock Clock
	// MaxBackwardWait is the largest wall-clock step back that is waited out;
	// a larger one is refused with ErrClockBackwards. Zero means 5 ms; a
	// negative value never waits.
	MaxBackwardWait time.Duration
	// ForwardJumpThreshold is how far the wall clock may run ahead of the
	// monotonic clock between two calls before a forward jump is reported
	// (Stats.ForwardJumps, a warning log, Health.Warnings) and, under
	// ClockRequire, refused until the clock is back in sync (clockjump.go:
	// the jump undone, or the kernel reporting the clock synchronised
	// ClockJumpSettle after it). Zero means 1 s. Apart from that, a lease
	// keeper's grant is refused (clock-jumped) once the wall clock gained
	// more than 100 ms on the monotonic one since the keeper's last
	// acknowledged renewal, whatever this says and whatever the policy.
	ForwardJumpThreshold time.Duration
	// ClockJumpSettle is how long after a forward jump ClockRequire waits
	// before it takes the kernel's word that the clock is synchronised
	// again. Zero means DefaultClockJumpSettle (2 min).
	ClockJumpSettle time.Duration
	// ExhaustionWarning is how long before the layout's last instant Health
	// starts warning. Zero means 5 years (365-day years).
	ExhaustionWarning time.Duration
	// ClockPolicy decides what an untrustworthy clock does. Empty means
	// ClockRequire: refuse while the kernel reports the clock
	// unsynchronised or its maximum error above MaxClockError, and after
	// a forward jump until the clock is back in sync. A holder whose lease
	// store is shared by several hosts wants that, and a library user who
	// sets nothing gets it; a holder alone on its host (the embedded etcd)
	// may set ClockWarn — package node does so for the embedded etcd when
	// this is empty, and logs it. On a system without adjtimex (not Linux)
	// ClockRequire refuses: set ClockWarn or ClockOff there.
	ClockPolicy ClockPolicy
	// MaxClockError is the kernel's maximum clock error that ClockRequire
	// tolerates. Zero means 5 ms.
	MaxClockError time.Duration
	// ClockStatus reads the clock-sync and leap-second state; it is called
	// at most once a second, off the fast path. Nil means
	// KernelClockStatus. Tests give a fake.
	ClockStatus func() (ClockStatus, error)
	// Logger receives warnings about clock steps, jumps and layout ends.
	// Nil discards them.
	Logger *slog.Logger
}

// A Generator mints IDs for one machine number at a time. It is safe for
// concurrent use; IDs from one generator strictly increase in the order the
// calls return.
type Generator struct {
	clock           Clock
	lease           LeaseView
	schedule        Schedule
	log             *slog.Logger
	maxBackMs       int64
	fwdJumpMs       int64
	exhaustWarn     time.Duration
	clockJumpSettle time.Duration
	policy          ClockPolicy
	maxClockError   time.Duration
	readStatus      func() (ClockStatus, error)

	// Constants of the schedule's timestamp.
	epochMs, unitMs, maxTick int64
	timeShift                uint

	mu sync.Mutex
	// State of issue: the last issued tick and sequence.
	lastTick int64
	seq      int64
	// Last clock observation, for forward-jump detection.
	lastWallMs int64
	lastMono   time.Duration
	observed   bool
	// The adopted grant and what follows from it.
	grant                *Grant
	startTick, limitTick int64
	// The layout step in force: its tick range, ID prefix and sequence max.
	stepFrom, stepUntil int64
	stepLayout          string
	prefix, seqMax      int64
	// Clock-sync state, read at most once a second.
	status       ClockStatus
	statusErr    error
	statusReadAt time.Duration
	statusRead   bool
	// A forward jump not yet back in sync (clockjump.go).
	jump clockJump
	// why names the last wait or refusal check returned.
	why string
	// Episode flags so warnings are logged once per episode.
	backwardEpisode bool
	lastJumpWallMs  int64
	closed          bool
	stats           Stats
}

// New checks cfg and returns a generator. It does not claim anything: the
// LeaseView does.
func New(cfg Config) (*Generator, error) {
	if cfg.Lease == nil {
		return nil, fmt.Errorf("%w: Config.Lease is nil; use a lease.Keeper, or snowfence.Static(machine, region) for a number assigned by hand", ErrInvalidConfig)
	}
	// A lease keeper claims with a schedule of its own (the store compares
	// it with the fleet's): the generator must mint under the same one.
	kept := cfg.Lease.Schedule()
	switch {
	case !cfg.Schedule.valid():
		cfg.Schedule = kept
	case kept.valid() && kept.String() != cfg.Schedule.String():
		return nil, fmt.Errorf("%w: Config.Schedule %q differs from the lease keeper's schedule %q, which it claims its numbers with; give both the same (or leave Config.Schedule zero to take the keeper's)",
			ErrInvalidConfig, cfg.Schedule.String(), kept.String())
	}
	if !cfg.Schedule.valid() {
		cfg.Schedule = DefaultSchedule()
	}
	// A lease keeper's clock must be shared: the self-fence compares the
	// keeper's monotonic readings with the generator's. Another clock —
	// even another SystemClock, which reads monotonic time from the
	// instant it was made — would make the generator stop late; a wrapper
	// of the keeper's clock reads the same, and is accepted.
	if c := cfg.Lease.Clock(); c != nil {
		if cfg.Clock == nil {
			cfg.Clock = c
		} else if err := checkSameClock(c, cfg.Clock); err != nil {
			return nil, err
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock()
	}
	now := time.UnixMilli(cfg.Clock.Now().WallMs)
	for _, pl := range cfg.Lease.Placements() {
		if !pl.Until.IsZero() && !pl.Until.After(now) {
			continue // over already
		}
		if pl.From.Before(now) {
			pl.From = now
		}
		if err := cfg.Schedule.CheckPlacement(pl); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	switch {
	case cfg.MaxBackwardWait == 0:
		cfg.MaxBackwardWait = 5 * time.Millisecond
	case cfg.MaxBackwardWait < 0:
		cfg.MaxBackwardWait = 0
	}
	if cfg.ForwardJumpThreshold <= 0 {
		cfg.ForwardJumpThreshold = time.Second
	}
	if cfg.ExhaustionWarning <= 0 {
		cfg.ExhaustionWarning = 5 * 365 * 24 * time.Hour
	}
	if cfg.ClockJumpSettle <= 0 {
		cfg.ClockJumpSettle = DefaultClockJumpSettle
	}
	if cfg.ClockPolicy == "" {
		cfg.ClockPolicy = ClockRequire
	}
	if _, err := ParseClockPolicy(string(cfg.ClockPolicy)); err != nil {
		return nil, err
	}
	if cfg.MaxClockError <= 0 {
		cfg.MaxClockError = 5 * time.Millisecond
	}
	if cfg.ClockStatus == nil {
		cfg.ClockStatus = KernelClockStatus
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	first := cfg.Schedule.steps[0].Layout
	g := &Generator{
		clock:           cfg.Clock,
		lease:           cfg.Lease,
		schedule:        cfg.Schedule,
		log:             cfg.Logger,
		maxBackMs:       cfg.MaxBackwardWait.Milliseconds(),
		fwdJumpMs:       cfg.ForwardJumpThreshold.Milliseconds(),
		exhaustWarn:     cfg.ExhaustionWarning,
		clockJumpSettle: cfg.ClockJumpSettle,
		policy:          cfg.ClockPolicy,
		maxClockError:   cfg.MaxClockError,
		readStatus:      cfg.ClockStatus,
		epochMs:         first.Epoch.UnixMilli(),
		unitMs:          first.unit().Milliseconds(),
		maxTick:         int64(1)<<first.TimeBits - 1,
		timeShift:       uint(63 - first.TimeBits),
		lastTick:        -1,
		stepUntil:       -1, // forces a layout choice on the first call
		stats:           Stats{Refused: map[string]uint64{}},
	}
	// Last, so that a configuration refused above binds nothing.
	if err := cfg.Lease.Bind(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return g, nil
}

// Next returns a new ID. It waits (at most about a tick, or MaxBackwardWait)
// when the tick's sequence is used up or the clock stepped back a little, and
// refuses with a typed error otherwise; a refused call changes nothing.
func (g *Generator) Next(ctx context.Context) (ID, error) {
	for {
		g.mu.Lock()
		id, _, waitMs, err := g.take(1)
		if err == nil && waitMs == 0 {
			g.stats.Issued++
		}
		g.mu.Unlock()
		if err != nil {
			return 0, err
		}
		if waitMs == 0 {
			return id, nil
		}
		if err := g.wait(ctx, waitMs); err != nil {
			return 0, err
		}
	}
}

// NextN returns n new IDs (1 ≤ n ≤ MaxBatch) in increasing order. When a
// tick's sequence runs out part way, the batch waits for the next tick and
// goes on there: timestamps never run ahead of the clock. If the batch fails
// part way, the IDs reserved so far are discarded, never issued later.
func (g *Generator) NextN(ctx context.Context, n int) ([]ID, error) {
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("%w: %d; ask for 1 to %d IDs", ErrInvalidCount, n, MaxBatch)
	}
	return g.AppendN(ctx, make([]ID, 0, n), n)
}

// AppendN is NextN appending to dst, for callers that reuse a buffer.
func (g *Generator) AppendN(ctx context.Context, dst []ID, n int) ([]ID, error) {
	if n < 1 || n > MaxBatch {
		return dst, fmt.Errorf("%w: %d; ask for 1 to %d IDs", ErrInvalidCount, n, MaxBatch)
	}
	base := len(dst)
	for left := n; left > 0; {
		g.mu.Lock()
		first, count, waitMs, err := g.take(left)
		g.mu.Unlock()
		if err != nil {
			return dst[:base], err
		}
		if waitMs != 0 {
			if err := g.wait(ctx, waitMs); err != nil {
				return dst[:base], err
			}
			continue
		}
		for i := range count {
			dst = append(dst, first+ID(i))
		}
		left -= count
	}
	// Counted only now: the IDs of a batch that fails part way are
	// discarded, never handed out.
	g.mu.Lock()
	g.stats.Issued += uint64(n)
	g.mu.Unlock()
	return dst, nil
}

// wait blocks until the wall clock reaches wallMs.
func (g *Generator) wait(ctx context.Context, wallMs int64) error {
	if _, err := g.clock.WaitUntil(ctx, wallMs); err != nil {
		g.mu.Lock()
		g.stats.Refused["canceled"]++
		g.mu.Unlock()
		return err
	}
	return nil
}

// take tries to reserve up to want IDs at the current tick. It returns the
// first ID and how many consecutive IDs were reserved, or a wall-clock
// millisecond to wait for before trying again, or an error. Nothing is
// committed unless IDs are returned. g.mu must be held.
func (g *Generator) take(want int) (first ID, count int, waitMs int64, err error) {
	if g.closed {
		return 0, 0, 0, ErrClosed
	}
	r := g.clock.Now()
	g.observe(r)
	tick, seq, waitMs, err := g.check(r)
	switch {
	case err != nil:
		if g.why == "clock-backwards" && !g.backwardEpisode {
			g.backwardEpisode = true
			g.stats.BackwardSteps++
			g.log.Warn("clock moved backwards; refusing to issue until it passes the last issued timestamp", "error", err)
		}
		g.stats.Refused[g.why]++
		return 0, 0, 0, err
	case waitMs != 0:
		switch g.why {
		case "sequence":
			g.stats.SequenceWaits++
		case "backward":
			g.stats.BackwardWaits++
		}
		return 0, 0, waitMs, nil
	}
	g.backwardEpisode = false
	count = int(min(int64(want), g.seqMax-seq+1))
	g.lastTick, g.seq = tick, seq+int64(count)-1
	return ID(tick<<g.timeShift | g.prefix | seq), count, 0, nil
}

// check runs every check of the minting loop against reading r without
// changing issue state (it may adopt a new grant and layout, which only
// changes derived constants). It returns the tick and sequence to issue at,
// or a wall-clock millisecond to wait for, or a refusal; g.why says which
// wait or refusal it was. g.mu must be held.
func (g *Generator) check(r Reading) (tick, seq, waitMs int64, err error) {
	refuse := func(reason string, err error) (int64, int64, int64, error) {
		g.why = reason
		return 0, 0, 0, err
	}
	wait := func(reason string, ms int64) (int64, int64, int64, error) {
		g.why = reason
		return 0, 0, ms, nil
	}
	grant, gerr := g.lease.GrantAt(r.WallMs)
	if grant == nil || gerr != nil {
		detail := "no machine number is leased yet"
		if gerr != nil {
			detail = gerr.Error()
		}
		return refuse("fenced", &FencedError{Reason: "no-lease", Detail: detail})
	}
	if grant != g.grant {
		g.adopt(grant)
	}
	if r.WallMs >= grant.LimitMs {
		// Refused below, whatever else is checked first (mark-reached,
		// or clock-jumped after a forward step): the lease may renew
		// now rather than at its next renewal, which may be a renewal
		// period away (the wall clock stepped forward, or renewals are
		// failing). Only a refused call tells it; GrantAt only reads.
		g.lease.MarkReached(grant)
	}
	// The self-fence below is measured on the monotonic clock: refused if
	// the wall clock ran ahead of it since the last acknowledged renewal
	// (fence_jump.go).
	if drift, jumped := clockJumped(grant, r); jumped {
		return refuse("fenced", &FencedError{Reason: "clock-jumped", Detail: fmt.Sprintf(
			"the wall clock ran %d ms ahead of the monotonic clock since the last acknowledged lease renewal (a clock step, or a host suspend); issuing resumes after the next renewal", drift)})
	}
	if grant.SelfFence > 0 && r.Mono-grant.RenewedAt >= grant.SelfFence {
		return refuse("fenced", &FencedError{Reason: "renewal-overdue", Detail: fmt.Sprintf(
			"no lease renewal acknowledged for %s (self-fence window %s); issuing resumes after the next successful renewal",
			(r.Mono - grant.RenewedAt).Round(time.Millisecond), grant.SelfFence)})
	}
	if r.WallMs < g.epochMs {
		return refuse("layout", fmt.Errorf("%w: the wall clock reads %s, before the layout's epoch; fix the clock",
			ErrNoLayout, time.UnixMilli(r.WallMs).UTC().Format(timeFormat)))
	}
	tick = r.WallMs - g.epochMs
	if g.unitMs != 1 {
		tick /= g.unitMs
	}
	if tick < g.lastTick {
		lastMs := g.epochMs + g.lastTick*g.unitMs
		if lastMs-r.WallMs <= g.maxBackMs {
			return wait("backward", lastMs)
		}
		return refuse("clock-backwards", &ClockBackwardsError{
			Step: time.Duration(lastMs-r.WallMs) * time.Millisecond,
			Last: time.UnixMilli(lastMs),
			Now:  time.UnixMilli(r.WallMs),
		})
	}
	if tick < g.stepFrom || tick >= g.stepUntil {
		if err := g.chooseLayout(tick); err != nil {
			return refuse("layout", err)
		}
	}
	if r.Mono < grant.StartMono {
		if ahead := grant.StartMono - r.Mono; ahead <= time.Duration(g.maxBackMs)*time.Millisecond {
			return wait("not-started", r.WallMs+int64((ahead+time.Millisecond-1)/time.Millisecond))
		}
		return refuse("fenced", &FencedError{Reason: "not-started", Detail: fmt.Sprintf(
			"the lease on machine %d starts in %s on the monotonic clock (a claim's first grant waits until any other holder still issuing on the number has had time to notice it, on the wall clock and the monotonic clock both)",
			grant.Machine, (grant.StartMono - r.Mono).Round(time.Millisecond))})
	}
	if tick < g.startTick {
		startMs := g.epochMs + g.startTick*g.unitMs
		if startMs-r.WallMs <= g.maxBackMs {
			return wait("backward", startMs)
		}
		return refuse("fenced", &FencedError{Reason: "not-started", Detail: fmt.Sprintf(
			"the lease on machine %d starts at %s, %d ms ahead of this clock (a new lease starts above the previous holder's mark, "+
				"and a claim's first grant waits until any other holder still issuing on the number has had time to notice it)",
			grant.Machine, time.UnixMilli(startMs).UTC().Format(timeFormat), startMs-r.WallMs)})
	}
	if tick >= g.limitTick {
		return refuse("fenced", &FencedError{Reason: "mark-reached", Detail: fmt.Sprintf(
			"the clock (%s) reached the lease's reserved mark (%s) on machine %d; issuing resumes when the lease keeper extends it",
			time.UnixMilli(r.WallMs).UTC().Format(timeFormat), time.UnixMilli(grant.LimitMs).UTC().Format(timeFormat), grant.Machine)})
	}
	if g.policy != ClockOff {
		if err := g.checkClockSync(r); err != nil {
			return refuse("clock-unsynchronized", err)
		}
	}
	if tick != g.lastTick {
		return tick, 0, 0, nil
	}
	if g.seq >= g.seqMax {
		return wait("sequence", g.epochMs+(tick+1)*g.unitMs)
	}
	return tick, g.seq + 1, 0, nil
}

// adopt switches to a new grant. IDs keep increasing across the switch: the
// issue state is kept, and a change of number starts on a fresh tick.
func (g *Generator) adopt(gr *Grant) {
	old := g.grant
	g.grant = gr
	if old != nil && (old.Machine != gr.Machine || old.Region != gr.Region) {
		g.seq = math.MaxInt64 - 1 // the current tick is used up for the new number
	}
	g.startTick = 0
	if s := gr.StartMs - g.epochMs; s > 0 {
		g.startTick = (s + g.unitMs - 1) / g.unitMs
	}
	g.limitTick = (gr.LimitMs - g.epochMs) / g.unitMs
	if gr.LimitMs < g.epochMs {
		g.limitTick = 0
	}
	g.stepUntil = -1 // the prefix depends on the numbers
}

// chooseLayout selects the schedule step in force at tick. It changes only
// derived constants, never issue state.
func (g *Generator) chooseLayout(tick int64) error {
	if tick > g.maxTick {
		last := g.schedule.steps[0].Layout.LastInstant()
		return fmt.Errorf("%w: the clock is past %s, the last instant the layout's %d timestamp bits can hold; move to a layout with a later epoch",
			ErrLayoutExhausted, last.Format(timeFormat), g.schedule.steps[0].Layout.TimeBits)
	}
	i := g.schedule.stepAt(tick)
	l := g.schedule.steps[i].Layout
	gr := g.grant
	// A layout without region bits has no room for a region other than 0:
	// the stores lease machine numbers per region, so two regions' holders
	// may hold the same number (Schedule.CheckPlacement refuses them at
	// start; this is the same rule on every grant adopted).
	region := regionInLayout(gr.Region, l)
	if gr.Machine < 0 || gr.Machine >= 1<<l.MachineBits || region < 0 || region >= 1<<l.RegionBits {
		from := "the epoch"
		if i > 0 {
			from = g.schedule.steps[i].From.UTC().Format(timeFormat)
		}
		if region != 0 && l.RegionBits == 0 {
			return fmt.Errorf("%w: layout %s is in force from %s and has no region bits, so region %d cannot be told from the other regions' holders of machine %d; "+
				"use region 0 until the cutover to a layout with region bits, and start holders of other regions only after it",
				ErrNoLayout, l.Name, from, gr.Region, gr.Machine)
		}
		return fmt.Errorf("%w: layout %s is in force from %s, and machine %d / region %d do not fit its %d machine and %d region bits; lease a number that fits before the cutover",
			ErrNoLayout, l.Name, from, gr.Machine, gr.Region, l.MachineBits, l.RegionBits)
	}
	s := l.shifts()
	g.stepFrom = g.schedule.fromTick[i]
	g.stepUntil = g.maxTick + 1
	if i+1 < len(g.schedule.fromTick) {
		g.stepUntil = g.schedule.fromTick[i+1]
	}
	g.stepLayout = l.Name
	g.prefix = int64(region)<<s.region | int64(gr.Machine)<<s.machine
	g.seqMax = int64(1)<<l.SequenceBits - 1
	return nil
}

// observe looks at reading r beside the last one (of a call or of Health)
// for a forward jump: the wall clock ahead of the monotonic clock by more
// than ForwardJumpThreshold.
func (g *Generator) observe(r Reading) {
	if g.observed && (r.WallMs-g.lastWallMs)-int64((r.Mono-g.lastMono)/time.Millisecond) > g.fwdJumpMs {
		g.forwardJump(Reading{WallMs: g.lastWallMs, Mono: g.lastMono}, r)
	}
	g.lastWallMs, g.lastMono, g.observed = r.WallMs, r.Mono, true
}

func (g *Generator) forwardJump(prev, r Reading) {
	jump := (r.WallMs - prev.WallMs) - int64((r.Mono-prev.Mono)/time.Millisecond)
	g.stats.ForwardJumps++
	g.lastJumpWallMs = r.WallMs
	if g.policy != ClockOff {
		g.startJump(prev, r)
	}
	then := "timestamps run ahead of true time if the clock did"
	if g.policy == ClockRequire {
		then = "clock policy require refuses until the clock is back in sync"
	}
	g.log.Warn("wall clock jumped forward relative to the monotonic clock (a host suspend, or a step); a lease keeper's grant stays refused (clock-jumped) until its next acknowledged renewal, and "+then,
		"jump_ms", jump, "clock", time.UnixMilli(r.WallMs).UTC().Format(timeFormat))
}

// LastIssued returns the wall-clock instant (Unix ms) just after the last
// issued timestamp's tick: the high-water mark a lease keeper records when it
// releases the number. It is 0 before the first ID.
func (g *Generator) LastIssued() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lastTick < 0 {
		return 0
	}
	return g.epochMs + (g.lastTick+1)*g.unitMs
}

// Close stops the generator: every later call fails with ErrClosed. It does
// not release the lease; the LeaseView's owner does.
func (g *Generator) Close() error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	return nil
}

// maxClockApart is how far apart the readings of the keeper's clock and
// the generator's may be (monotonic, and wall), read one after the other:
// a clock that wraps the keeper's reads the same; two clocks made apart
// differ by the time between.
const maxClockApart = 5 * time.Millisecond

// jumpFenceMs is how far the wall clock may run ahead of the monotonic one
// since a keeper's last acknowledged renewal before its grant is refused
// (clock-jumped). NTP slews at most 500 ppm, 5 ms over a 10 s renewal
// period; anything more is a step or a suspend. It is not
// ForwardJumpThreshold, which only sets what is reported as a jump.
const jumpFenceMs = 100

// checkSameClock refuses a generator clock that does not read as the
// keeper's: read between two of the keeper's readings, its monotonic and
// its wall reading must each lie within maxClockApart of them. A monotonic
// reading apart makes the self-fence late; a wall reading ahead makes the
// clock-jumped fence, which compares it with the keeper's renewal
// readings, refuse for ever.
func checkSameClock(keeper, gen Clock) error {
	k0 := keeper.Now()
	g := gen.Now()
	k1 := keeper.Now()
	if g.Mono < k0.Mono-maxClockApart || g.Mono > k1.Mono+maxClockApart {
		return fmt.Errorf("%w: Config.Clock reads monotonic time %s apart from the lease keeper's clock; the generator's self-fence compares its monotonic readings with the keeper's, "+
			"so on another clock (even another SystemClock) it would stop late; leave Config.Clock nil to take the keeper's, or give the keeper the same clock",
			ErrInvalidConfig, max(k0.Mono-g.Mono, g.Mono-k1.Mono).Round(time.Millisecond))
	}
	if apart := maxClockApart.Milliseconds(); g.WallMs < k0.WallMs-apart || g.WallMs > k1.WallMs+apart {
		return fmt.Errorf("%w: Config.Clock's wall clock reads %d ms apart from the lease keeper's; the generator compares its wall readings with the keeper's renewals "+
			"(a clock that ran ahead is refused as clock-jumped), so it would never issue; leave Config.Clock nil to take the keeper's, or give the keeper the same clock",
			ErrInvalidConfig, max(k0.WallMs-g.WallMs, g.WallMs-k1.WallMs))
	}
	return nil
}
