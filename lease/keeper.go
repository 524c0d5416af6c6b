package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence"
)

// KeeperConfig configures a Keeper. The zero value of every field but Store is
// a working default; the timing defaults are etcd's: a 10 s lease renewed
// every 2 s, a 5 s self-fence (docs/design.md#timings). Table stores
// document their own (longer) timings.
type KeeperConfig struct {
	// Store is where numbers are leased: its keyspace (what its
	// Config.Region selects) holds the numbers of the schedule's first
	// layout step; the numbers of step s ≥ 1 live in its keyspace
	// KeyspaceOf(s, Region), which the keeper opens with Store.Keyspace.
	// Required.
	Store Store
	// Holder is this holder's identity. It must be unique per process:
	// two processes given one holder string rely on the store's per-claim
	// nonces alone to tell their claims apart. Empty means ThisProcess()
	// followed by "/k<N>", N counting the keepers of this process, so that
	// two keepers of one process never share one.
	Holder string
	// Range is the machine numbers this holder's class may use, under
	// every layout of Schedule not in LayoutRanges. Nil means each
	// layout's whole machine range (0–1023 for v1, 0–511 for v2). The
	// keeper leases a number per layout (see Lead), and the layout must
	// hold all of its range: StartKeeper refuses it otherwise, so every
	// number claimed fits.
	Range *Range
	// LayoutRanges gives layouts of Schedule, by name, machine numbers of
	// their own, such as {"v2": 0-99} beside a Range of 600-699 for v1.
	// The same configuration serves before and after a cutover. A name
	// that is no layout of Schedule is refused.
	LayoutRanges map[string]Range
	// Lead is how long before a cutover of Schedule (a later step's From)
	// the keeper starts claiming its number for the layout that takes
	// over, holding it beside the current one; the generator issues on the
	// old number for instants before the cutover and on the new one from
	// it on. Zero means max(10 min, 20 × LeaseFor): ample time for every
	// holder running before the window to claim, and for a claim refused
	// while a dead holder's lease runs out to be retried many times. Below
	// 2 × LeaseFor it is refused; a longer one only holds the second number
	// longer.
	Lead time.Duration
	// Region is the region whose numbers the store leases, written into
	// the grants (and v2 IDs). It must equal the store's region when the
	// store tells it (a Region() int method, as the stores have), and it
	// must be 0 while a layout without region bits (v1) is in force: the
	// stores lease numbers per region, so two regions' holders may hold
	// the same number. With a schedule of more than one step it must be
	// below KeyspaceStride. When the store holds a region registry, it
	// must be the number of a region the registry has, in service, whose
	// home (if recorded) is this store (StartKeeper); with none, any
	// number is taken as it is, as in a fleet of one region.
	Region int
	// Schedule is the layout schedule of this holder's generator. Every
	// claim carries it (ClaimRequest.Schedule) and the store refuses it,
	// with ErrSchedule, unless it equals the fleet schedule kept beside the
	// leases. snowfence.New takes it for a generator configured with none.
	// Zero means snowfence.DefaultSchedule() (v1).
	Schedule snowfence.Schedule
	// Clock is the source of time; the generator must use the same one
	// (snowfence.New takes it from the keeper when its own Config.Clock is
	// nil, and refuses one that does not read the same), because the
	// self-fence compares monotonic readings of both. Nil means
	// snowfence.SystemClock().
	Clock snowfence.Clock
	// LeaseFor is how long a lease lives in the store without renewal (the
	// etcd lease TTL). Zero means 10 s.
	LeaseFor time.Duration
	// RenewEvery is the renewal period. Zero means 2 s.
	RenewEvery time.Duration
	// SelfFence is how long after the send time of the last acknowledged
	// renewal the generator stops issuing. Zero means 5 s. It must be
	// shorter than LeaseFor by enough to hold with clocks 8 % fast or slow:
	// SelfFence × 1.08 < LeaseFor × 0.92. Its NoticeWindow must be within
	// the store's MaxNoticeWindow, the wait before the first grant of every
	// claim on the store (fence_notice.go).
	SelfFence time.Duration
	// Reserve is how far ahead of the clock each renewal puts the mark.
	// Zero means LeaseFor, so that by the time a dead holder's lease expires
	// its mark has passed and the next holder need not wait. At most
	// MaxReserve (30 min).
	Reserve time.Duration
	// Margin is kept between the generator's limit and the stored mark.
	// Zero means none: the mark is exclusive, and a new holder starts at or
	// above it, so no margin is needed for uniqueness.
	Margin time.Duration
	// MaxAhead: a number whose mark is further than this ahead of the clock
	// is passed over for another rather than waited for. Zero means 2 s.
	MaxAhead time.Duration
	// MaxWait: when no number is within MaxAhead, a number whose mark is
	// up to this far ahead is taken, and the generator refuses ("fenced:
	// not-started") until the clock reaches the mark. Zero means 2 minutes;
	// set it equal to MaxAhead to fail with ErrNoFreeNumber instead.
	MaxWait time.Duration
	// RestoreMargin is the longest a holder cut off from the store may go
	// on issuing after its last acknowledged renewal, with a budget for
	// clock skew. After the store is found restored from an earlier state,
	// this keeper's new leases start no earlier than its clock plus this;
	// every claim also passes it to the store (ClaimRequest.RestoreWindow),
	// which once it has noticed a restore starts every claim at least this
	// long after the moment it noticed. Zero means max(Reserve, SelfFence)
	// × 1.1 + 1 s: a self-fence timed on a clock 8 % slow lasts up to
	// 1/0.92 ≈ 1.087 times as long in real time, and two hosts' wall
	// clocks may disagree by up to 1 s. A smaller value is refused with
	// ErrInvalid, and so is one above the store's MaxRestoreWindow, the
	// floor the store keeps for every holder after a restore.
	RestoreMargin time.Duration
	// RequestTimeout bounds each store call. Zero means RenewEvery / 2.
	RequestTimeout time.Duration
	// Boottime reads a clock that counts through host suspend, for the
	// self-fence watchdog. Nil means CLOCK_BOOTTIME when Clock is nil or a
	// snowfence.SystemClock, and no watchdog with a Clock of another kind,
	// whose readings the generator already checks on every ID (a wall
	// clock that ran ahead of the monotonic one, as across a host suspend,
	// fences the grant until a renewal sent after it is acknowledged).
	Boottime func() time.Duration
	// Logger receives claims, renewal failures, losses and releases. Nil
	// discards them.
	Logger *slog.Logger
	// HighWater, if not nil, keeps the highest mark this keeper had
	// acknowledged where a restore of the store cannot take it back: every
	// grant ends at or below the mark it recorded (raised ahead of use,
	// highwater.go) and starts at or above the one it held when the keeper
	// started, and Close lowers it to the end of the last ID issued. For a
	// store restored with the holder's own host, such as the embedded etcd
	// (node.EmbeddedEtcd sets it to a file beside the data directory,
	// embedetcd.Server.HighWater). One keeper at a time per HighWater: a
	// second one in the process is refused with ErrInvalid. A HighWater
	// that cannot load its mark refuses the start (ErrInvalid, ErrHighWater).
	HighWater HighWater
}

// A Keeper holds one machine number at a time for each layout of its
// schedule that is in force or about to be: it claims one in the background
// from its start (waiting as a spare while every number is held; Claimed
// waits for one), renews it and its
// mark on a schedule, tells the generator its fence (it is the generator's
// snowfence.LeaseView), claims a different number after losing one, and
// releases on Close with the mark its owner gives (the end of the last ID
// issued: Generator.LastIssued). It never reads the generator.
//
// Across a cutover of the schedule (a step whose From is ahead), it starts
// claiming a number for the next layout Lead before the cutover, in that
// layout's own keyspace (KeyspaceOf), and holds both: each lease is renewed
// and fenced on its own, grants of the old one end at the cutover and grants
// of the new one start there, and the generator asks for the grant of the
// instant it issues at (GrantAt). After the cutover the keeper releases the
// old number itself, with the cutover as its mark (or its reservation, if
// that ends first): every ID issued on it lies below, since its grants end
// there. A holder without a number for the new layout at the cutover
// refuses to issue until it has one. It is safe for concurrent use.
//
// A Keeper feeds exactly one generator: snowfence.New binds the first
// (Bind) and refuses a second with snowfence.ErrLeaseBound. A program that
// wants several generators starts a keeper for each.

type Keeper struct {
	cfg  KeeperConfig
	log  *slog.Logger
	boot func() time.Duration

	// holds has one entry per schedule step from the one in force at start
	// on, in step order; it does not change after StartKeeper.
	holds []*hold

	mu sync.Mutex
	// bound is set once a generator is bound (Bind).
	bound  bool
	closed bool
	// closing is closed when the first Close has finished: a second Close
	// waits for it, so that its caller does not close the store under the
	// first one's releases.
	closing chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
	// hw is the keeper's use of cfg.HighWater (highwater.go).
	hw highWater
	// turned is the monotonic reading (nanoseconds) at which the run loop
	// last came round (stall.go).
	turned atomic.Int64

	// early wakes the renewal loop before its next renewal is due: a
	// caller's clock reached a grant's LimitMs (MarkReached), as it does
	// after a forward step of the wall clock, which the loop, sleeping on
	// the monotonic clock, cannot see. One slot: wake-ups coalesce.
	early chan struct{}

	// The claim loop's outcome, for Claimed and Err (claimloop.go),
	// guarded by mu: err is the error that stopped the keeper (nil while
	// it runs), failed is closed then, and changed is closed and replaced
	// after every step of a hold, so that a waiter looks again.
	err     error
	failed  chan struct{}
	changed chan struct{}
}

var _ snowfence.LeaseView = (*Keeper)(nil)

// errNotYet is the reason before the first claim.
var errNotYet = errors.New("lease: no machine number claimed yet")

// errClosed is the reason after Close.
var errClosed = errors.New("lease: keeper closed")

// StartKeeper checks cfg, checks it against the store's copy of the region
// registry and starts the keeper's loop, which claims a number for the
// layout in force now in the background, renews it, and claims another after
// a loss; numbers for later layouts of cfg.Schedule are claimed from Lead
// before their cutovers. It returns at once, before any claim: until the
// keeper holds a number its generator refuses with "no-lease" (the reason
// says why, such as every number being held), and Claimed waits for one
// (claimloop.go). While every number of the range is held (ErrNoFreeNumber)
// the keeper waits as a spare does, claiming again with a jittered backoff
// from 250 ms to min(5 s, RenewEvery). A first claim refused for a reason
// retrying cannot fix (ErrSchedule, ErrInvalid) stops the keeper: Err
// returns that error, Failed is closed, Status says StateFailed, and the
// generator refuses with it.
//
// StartKeeper fails with ErrInvalid for a configuration it cannot use
// (including a range or region that a layout of cfg.Schedule in force from
// now on cannot hold: the error also matches snowfence.ErrPlacement, and a
// HighWater that cannot load its mark: ErrHighWater).
//
// When the store holds a region registry (Store.Registry at a version
// above 0), before any claim it also refuses cfg.Region if the registry
// does not have it (registry.ErrUnknownRegion) or it is retired (registry.ErrRegionRetired),
// a store that is not the region's home (ErrWrongHome: the store's
// RegistryIdentity is not the one the registry records for the region's
// home copy), and, when the registry records the fleet schedule,
// cfg.Schedule or the store's fleet schedule record if either differs from
// it (ErrSchedule: CheckHolderSchedule); each error names the command that
// fixes it. A failed read of the registry is retried (every RenewEvery/4)
// until ctx ends, within StartKeeper: a refusal must reach the caller as
// an error before anything is claimed. A store with no registry is a fleet
// of one region as far as the keeper can tell: cfg.Region is not checked
// (it logs so, at Info). ctx bounds only these reads; the keeper runs until
// Close.
func StartKeeper(ctx context.Context, cfg KeeperConfig) (*Keeper, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	k := &Keeper{cfg: cfg, log: cfg.Logger, boot: cfg.Boottime, done: make(chan struct{}), closing: make(chan struct{}), early: make(chan struct{}, 1),
		failed: make(chan struct{}), changed: make(chan struct{})}
	if err := k.plan(); err != nil {
		k.closeStores()
		return nil, err
	}
	for checksRegistry() {
		err := k.checkRegistry(ctx)
		if err == nil {
			break
		}
		if registryRefused(err) {
			k.closeStores()
			return nil, err
		}
		k.log.Warn("reading the region registry failed; retrying", "holder", cfg.Holder, "error", err)
		if serr := cfg.Clock.Sleep(ctx, cfg.RenewEvery/4); serr != nil {
			k.closeStores()
			return nil, fmt.Errorf("lease: the region registry was not read before the context ended (%w): last error: %w", serr, err)
		}
	}
	// The HighWater is read here rather than at the first claim, so that
	// one that cannot load refuses the start.
	if err := k.hw.load(&k.cfg, k.log, cfg.Clock.Now().WallMs); err != nil {
		k.closeStores()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	k.turn()
	go k.run(runCtx)
	return k, nil
}

// run drives every hold from one goroutine, so that a keeper is one loop
// asleep on its clock whatever its schedule: each hold renews on its own
// pace (RenewEvery after a step, sooner after a failure, at once after a
// loss); a hold for a later layout starts claiming at its start instant
// (polled at the renewal pace) and a hold whose window has passed is
// retired at its next turn. Steps of two holds due together run one after
// the other. The boot-clock watchdog runs beside it.
func (k *Keeper) run(ctx context.Context) {
	defer close(k.done)
	if k.boot != nil {
		// The watchdog ends with the loop, and the loop's end (done, which
		// Close waits for) waits for the watchdog's.
		wctx, stop := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() { defer close(watched); k.watchdog(wctx) }()
		defer func() { stop(); <-watched }()
	}
	c := &k.cfg
	due := make([]time.Duration, len(k.holds))
	live := make([]bool, len(k.holds))
	// stepped is when each hold last renewed or claimed: an early renewal
	// comes no sooner than RenewEvery/4 after it (the pace of retries
	// while the store fails), however many callers reach the mark.
	stepped := make([]time.Duration, len(k.holds))
	// waits are each hold's claims while it holds no number (claimloop.go).
	waits := make([]claimWait, len(k.holds))
	now := c.Clock.Now().Mono
	for i := range k.holds {
		due[i], live[i], stepped[i] = now+c.RenewEvery, true, now
	}
	due[0] = now // the first claim, at once
	for {
		k.turn()
		next, any := time.Duration(math.MaxInt64), false
		for i := range k.holds {
			if live[i] {
				next, any = min(next, due[i]), true
			}
		}
		if !any {
			<-ctx.Done()
			return
		}
		if wait := next - c.Clock.Now().Mono; wait > 0 {
			woke, err := k.sleep(ctx, wait)
			if err != nil {
				return
			}
			if woke {
				r := c.Clock.Now()
				for i, h := range k.holds {
					if g := h.grant.Load(); live[i] && g != nil && r.WallMs >= g.LimitMs {
						due[i] = min(due[i], max(r.Mono, stepped[i]+c.RenewEvery/4))
					}
				}
				continue
			}
		} else if ctx.Err() != nil {
			return
		}
		for i, h := range k.holds {
			r := c.Clock.Now()
			if !live[i] || due[i] > r.Mono {
				continue
			}
			switch {
			case h.pastCutover(r.WallMs):
				h.retire(ctx)
				live[i] = false
				continue
			case r.WallMs < h.startMs && !h.started():
				// Not yet: a later layout's hold claims from Lead before
				// its cutover. Once it has claimed, it renews at its
				// pace whatever the wall clock reads: a step back before
				// its start must not stop the renewals of a number held.
				due[i] = r.Mono + c.RenewEvery
				continue
			}
			claiming := !h.holding()
			err := h.step(ctx)
			if ctx.Err() != nil {
				return
			}
			stepped[i] = c.Clock.Now().Mono
			k.turn()
			wait := h.waitAfter(err)
			if claiming {
				var stop bool
				if wait, stop = k.claimed(h, &waits[i], err, wait); stop {
					<-ctx.Done() // stopped (Err): nothing runs until Close
					return
				}
			}
			due[i] = stepped[i] + wait
			k.signal()
		}
	}
}

// sleep waits for d on the keeper's clock, or until a caller reaches a
// grant's mark (early, which it reports as woke), or until ctx is done.
func (k *Keeper) sleep(ctx context.Context, d time.Duration) (woke bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-k.early:
			woke = true
			cancel()
		case <-stop:
		}
	}()
	err = k.cfg.Clock.Sleep(sctx, d)
	close(stop)
	<-done // woke is the goroutine's; a wake-up taken after the sleep ended is not lost
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if woke {
		return true, nil
	}
	return false, err
}

// plan makes one hold per schedule step from the one in force now on, each
// with its store, range and window, and checks each placement.
func (k *Keeper) plan() error {
	c := &k.cfg
	steps := c.Schedule.Steps()
	if len(steps) > MaxSteps {
		return fmt.Errorf("%w: schedule %s has %d layout steps; a leasing holder's schedule has at most %d", ErrInvalid, c.Schedule, len(steps), MaxSteps)
	}
	now := c.Clock.Now().WallMs
	cur := 0
	for i := 1; i < len(steps); i++ {
		if steps[i].From.UnixMilli() <= now {
			cur = i
		}
	}
	for s := cur; s < len(steps); s++ {
		h := &hold{k: k, index: s, layout: steps[s].Layout.Name, fromMs: math.MinInt64, untilMs: math.MaxInt64, store: c.Store, keyspace: c.Region}
		if s > 0 {
			h.fromMs = steps[s].From.UnixMilli()
		}
		if s+1 < len(steps) {
			h.untilMs = steps[s+1].From.UnixMilli()
		}
		h.startMs = now
		if s > cur {
			h.startMs = h.fromMs - c.Lead.Milliseconds()
		}
		if len(steps) > 1 {
			var err error
			if h.keyspace, err = KeyspaceOf(s, c.Region); err != nil {
				return err
			}
		}
		rng, own := c.LayoutRanges[h.layout]
		switch {
		case own:
		case c.Range != nil:
			rng = *c.Range
		default:
			rng = Range{0, 1<<steps[s].Layout.MachineBits - 1}
		}
		h.rng = rng
		if err := c.Schedule.CheckPlacement(h.placement(now)); err != nil {
			if !own && c.Range != nil && len(steps) > 1 {
				return fmt.Errorf("%w: %w (the range applies to every layout without one of its own: give layout %s one, in KeeperConfig.LayoutRanges or as serve --machines %s,%s=lo-hi)",
					ErrInvalid, err, h.layout, c.Range, h.layout)
			}
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if h.keyspace != c.Region {
			st, err := c.Store.Keyspace(h.keyspace)
			if err != nil {
				return fmt.Errorf("opening the keyspace of layout %s (step %d): %w", h.layout, s, err)
			}
			h.store, h.ownStore = st, true
		}
		h.status = Status{State: StateClaiming, Machine: -1, Region: c.Region, Holder: c.Holder, Layout: h.layout}
		why := errNotYet
		if s > cur {
			why = fmt.Errorf("%w for layout %s, in force from %s; claiming starts at %s", errNotYet, h.layout, msTime(h.fromMs), msTime(h.startMs))
		}
		h.setWhy(why)
		k.holds = append(k.holds, h)
	}
	return nil
}

// closeStores closes the keyspace stores plan opened.
func (k *Keeper) closeStores() {
	for _, h := range k.holds {
		if h.ownStore {
			h.store.Close()
		}
	}
}

func (c *KeeperConfig) defaults() error {
	if c.Store == nil {
		return fmt.Errorf("%w: KeeperConfig.Store is nil", ErrInvalid)
	}
	if c.Holder == "" {
		h, err := defaultHolder()
		if err != nil {
			return err
		}
		c.Holder = h
	}
	if c.Schedule.IsZero() {
		c.Schedule = snowfence.DefaultSchedule()
	}
	c.defaultClock()
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.LeaseFor, 10*time.Second)
	def(&c.RenewEvery, 2*time.Second)
	def(&c.SelfFence, 5*time.Second)
	def(&c.Reserve, c.LeaseFor)
	def(&c.MaxAhead, 2*time.Second)
	def(&c.MaxWait, 2*time.Minute)
	window := c.defaultRestoreWindow()
	def(&c.RestoreMargin, window)
	def(&c.RequestTimeout, c.RenewEvery/2)
	def(&c.Lead, max(10*time.Minute, 20*c.LeaseFor))
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ranges := []*Range{c.Range}
	for name, r := range c.LayoutRanges {
		known := false
		for _, st := range c.Schedule.Steps() {
			known = known || st.Layout.Name == name
		}
		if !known {
			return fmt.Errorf("%w: LayoutRanges names layout %q, which schedule %s does not have", ErrInvalid, name, c.Schedule)
		}
		ranges = append(ranges, &r)
	}
	for _, r := range ranges {
		if r != nil && (r.Lo < 0 || r.Hi < r.Lo) {
			return fmt.Errorf("%w: machine range %s: write lo-hi with 0 ≤ lo ≤ hi", ErrInvalid, r)
		}
	}
	switch {
	case c.Lead < 2*c.LeaseFor:
		return fmt.Errorf("%w: Lead %s is shorter than two lease lengths (LeaseFor %s): a claim for the next layout refused while a dead holder's lease runs out "+
			"would have no second chance before the cutover; leave it zero or make it longer", ErrInvalid, c.Lead, c.LeaseFor)
	case c.RenewEvery >= c.SelfFence:
		return fmt.Errorf("%w: RenewEvery %s must be shorter than SelfFence %s, or every pause between renewals fences", ErrInvalid, c.RenewEvery, c.SelfFence)
	case float64(c.SelfFence)*1.08 >= float64(c.LeaseFor)*0.92:
		return fmt.Errorf("%w: SelfFence %s must stay below LeaseFor %s with clocks 8 %% fast or slow (SelfFence×1.08 < LeaseFor×0.92)", ErrInvalid, c.SelfFence, c.LeaseFor)
	case c.Reserve > MaxReserve:
		return fmt.Errorf("%w: Reserve %s is longer than %s: a change of the fleet schedule gives holders only %s of notice, "+
			"and a mark reserved further ahead could outlast it; use a shorter Reserve (or LeaseFor)", ErrInvalid, c.Reserve, MaxReserve, MinScheduleNotice)
	case c.Margin < 0 || c.Margin >= c.Reserve:
		return fmt.Errorf("%w: Margin %s must be at least 0 and below Reserve %s", ErrInvalid, c.Margin, c.Reserve)
	case c.restoreMarginTooShort(window):
		return fmt.Errorf("%w: RestoreMargin %s is shorter than a cut-off holder may go on issuing: max(Reserve %s, SelfFence %s) × 1.1 + 1 s = %s; "+
			"leave it zero or make it at least that", ErrInvalid, c.RestoreMargin, c.Reserve, c.SelfFence, window)
	}
	if maxW := c.Store.MaxRestoreWindow(); c.restoreMarginTooLong(maxW) {
		// After a restore the store floors every claim at its own
		// window, the longest any holder of it may have: a holder cut off
		// by the restore with a longer one could still be issuing when
		// another process's claim starts.
		return fmt.Errorf("%w: this keeper's restore window %s (max(Reserve %s, SelfFence %s) × 1.1 + 1 s, or RestoreMargin) is longer "+
			"than the %s this store keeps after a restore for every holder; shorten Reserve or SelfFence (or LeaseFor)",
			ErrInvalid, c.RestoreMargin, c.Reserve, c.SelfFence, maxW)
	}
	if err := c.checkNotice(); err != nil {
		return err
	}
	if r := c.Store.Region(); r != c.Region {
		return fmt.Errorf("%w: KeeperConfig.Region %d differs from the store's region %d; give both the same", ErrInvalid, c.Region, r)
	}
	return nil
}

// RestoreWindow is the default KeeperConfig.RestoreMargin for these timings:
// max(reserve, selfFence) × 1.1 + 1 s, the longest a holder cut off from the
// store may go on issuing after its last acknowledged renewal, with clocks
// 8 % fast or slow and 1 s apart.
func RestoreWindow(reserve, selfFence time.Duration) time.Duration {
	w := max(reserve, selfFence)
	return w + w/10 + time.Second
}

// Grant is the grant for IDs at the keeper clock's current reading
// (GrantAt), or nil and the reason there is none.
func (k *Keeper) Grant() (*snowfence.Grant, error) {
	return k.GrantAt(k.cfg.Clock.Now().WallMs)
}

// GrantAt implements snowfence.LeaseView: the grant of the number held for
// the layout in force at wallMs, or nil and the reason there is none. It
// changes no grant; it notes wallMs, as a bound on the instants IDs were
// issued at, which Close releases at or above (fence_releasemark.go).
func (k *Keeper) GrantAt(wallMs int64) (*snowfence.Grant, error) {
	h := k.holdAt(wallMs)
	if h == nil {
		return nil, fmt.Errorf("%w: the clock reads %s, before the layout this keeper started under; fix the clock", errNotYet, msTime(wallMs))
	}
	// Noted before the grant is read: Close withdraws the grants before it
	// reads the note, so a grant read here before that is counted.
	h.handOut(wallMs)
	if g := h.grant.Load(); g != nil {
		return g, nil
	}
	if g := k.oldLayoutGrant(h); g != nil {
		return g, nil
	}
	return nil, *h.why.Load()
}

// holdAt returns the hold whose window contains wallMs, or nil.
func (k *Keeper) holdAt(wallMs int64) *hold {
	for i := len(k.holds) - 1; i >= 0; i-- {
		if h := k.holds[i]; wallMs >= h.fromMs {
			if wallMs < h.untilMs {
				return h
			}
			return nil
		}
	}
	return nil
}

// current returns the hold for the layout in force now: the one whose
// number Status and Lease report.
func (k *Keeper) current() *hold {
	if h := k.holdAt(k.cfg.Clock.Now().WallMs); h != nil {
		return h
	}
	return k.holds[0]
}

// MarkReached implements snowfence.LeaseView: the generator's clock
// reached g's LimitMs and its call was refused, so the renewal loop, asleep
// on the monotonic clock (which a forward step of the wall clock does not
// move), is woken to renew now rather than at the next renewal, which may
// be RenewEvery away; the loop renews no sooner than RenewEvery/4 after its
// last renewal. Once per grant: a renewal that fails publishes none, and
// the loop retries at its own pace.
func (k *Keeper) MarkReached(g *snowfence.Grant) {
	for _, h := range k.holds {
		if h.grant.Load() == g && h.woken.Load() != g {
			h.woken.Store(g)
			select {
			case k.early <- struct{}{}:
			default:
			}
			return
		}
	}
}

// Bind implements snowfence.LeaseView: snowfence.New calls it for the one
// generator the keeper feeds. A second binding fails with
// snowfence.ErrLeaseBound, for the life of the keeper: another generator
// would not know the first one's last tick and sequence.
func (k *Keeper) Bind() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.boundAlready() {
		return fmt.Errorf("%w: keeper %s feeds one generator already; give each generator a keeper of its own (StartKeeper), or share the generator, which is safe for concurrent use",
			snowfence.ErrLeaseBound, k.cfg.Holder)
	}
	k.bound = true
	return nil
}

// UnknownIssued is the lastIssued to give Close when the end of the last ID
// issued on the keeper's numbers is not known: every number is then released
// with its whole reservation (safe: the next holder of the number passes it
// over until the clock reaches it), and the HighWater mark stays where it
// was reserved. Any negative value means the same.
const UnknownIssued int64 = -1

// releaseMark is the mark to release l with: lastIssued (the end of the last
// timestamp issued, from Close's caller; UnknownIssued or any negative
// value: not known) within what l reserved.
func releaseMark(l *Lease, lastIssued int64) int64 {
	if lastIssued < 0 {
		return l.MarkMs
	}
	return min(max(lastIssued, l.StartMs), l.MarkMs)
}

// Status returns a snapshot for health checks and metrics: the number of the
// layout in force now, and in Next the one claimed for the next layout
// while a cutover approaches.
func (k *Keeper) Status() Status {
	h := k.current()
	s := h.Status()
	// holds are the schedule's steps from the first in order: the next
	// step's is at h's position + 1.
	if i := h.index - k.holds[0].index + 1; i < len(k.holds) && k.cfg.Clock.Now().WallMs >= k.holds[i].startMs {
		ns := k.holds[i].Status()
		s.Next = &ns
	}
	return s
}

// Lease returns the lease held now for the layout in force, or nil.
func (k *Keeper) Lease() *Lease {
	h := k.current()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lease == nil {
		return nil
	}
	l := *h.lease
	return &l
}

// Clock returns the keeper's clock, which its generator must share.
func (k *Keeper) Clock() snowfence.Clock { return k.cfg.Clock }

// RenewEvery returns the keeper's renewal period (KeeperConfig.RenewEvery,
// defaulted): the pace of what follows the store as the keeper does, such
// as the count of the fleet's holders that divides callers' quotas.
func (k *Keeper) RenewEvery() time.Duration { return k.cfg.RenewEvery }

// Schedule returns the layout schedule the keeper claims with; its
// generator must mint under the same one (snowfence.New takes it when its
// Config.Schedule is zero, and refuses a different one).
func (k *Keeper) Schedule() snowfence.Schedule { return k.cfg.Schedule }

// Placements implements snowfence.LeaseView: per layout step held, the
// machine range the keeper claims from and the region of its grants.
func (k *Keeper) Placements() []snowfence.Placement {
	now := k.cfg.Clock.Now().WallMs
	ps := make([]snowfence.Placement, len(k.holds))
	for i, h := range k.holds {
		ps[i] = h.placement(now)
	}
	return ps
}

// Closed returns a channel that is closed once Close has stopped the
// keeper's background loops; it closes while Close runs, before the numbers
// are released. It is not the Done of etcd's concurrency.Session, which
// closes when the lease is lost: a Keeper that loses its number stops the
// generator issuing on it and claims another, and runs until Close. A lost
// or overdue lease shows in Status (StateClaiming, StateFenced, Losses) and
// in the generator's Health.
func (k *Keeper) Closed() <-chan struct{} { return k.done }

// watchdog fences the generator when the last acknowledged renewal of a
// number, measured on the boot clock, is older than SelfFence: a host
// suspend stops the monotonic clock the generator checks, not the boot
// clock. It polls on real time because it watches the real host.
func (k *Keeper) watchdog(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, h := range k.holds {
			h.checkBoot()
		}
	}
}

// Close stops renewing, makes the generator refuse, and releases every
// number held, recording lastIssued as its mark. It waits for the
// background loops to stop.
//
// lastIssued is the end of the last timestamp issued on the keeper's
// numbers: its generator's LastIssued, read after the generator was closed
// (Generator.Close, then LastIssued), so that nothing is issued after it
// (0 if it issued nothing). The next holder of a number starts at the mark.
// A lastIssued below an ID issued — read before the generator stopped —
// is raised to the end of the tick of the latest instant GrantAt was asked
// about (fence_releasemark.go): the generator issues at no later one. When
// it is not known, or no generator was made, give UnknownIssued. A second
// Close releases nothing: it waits until the first has finished and
// returns nil, or returns ctx's error if ctx ends first.
//
// A claim in flight is not canceled: Close waits for its reply, at most
// the RequestTimeout, and gives up the number it got (hold.claim).
func (k *Keeper) Close(ctx context.Context, lastIssued int64) error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		select {
		case <-k.closing:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("lease: the keeper's first Close is still releasing its numbers; close the store only after it returns: %w", ctx.Err())
		}
	}
	k.closed = true
	k.mu.Unlock()
	defer close(k.closing)
	k.signal() // a Claimed waiting returns
	held := make([]*Lease, len(k.holds))
	for i, h := range k.holds {
		held[i] = h.shut()
	}
	k.cancel()
	<-k.done
	var errs []error
	for i, h := range k.holds {
		if held[i] != nil {
			errs = append(errs, h.releaseHeld(ctx, held[i], h.issuedAtMost(lastIssued)))
		}
	}
	notice := closeNotice(k.cfg.Clock.Now().WallMs + k.cfg.Store.MaxNoticeWindow().Milliseconds())
	if err := k.hw.settle(k.issuedAtMost(lastIssued), notice, lastIssued >= 0); err != nil {
		k.log.Warn("the high-water mark stays where it was reserved; the next start waits until the clock passes it", "error", err)
	}
	k.closeStores()
	return errors.Join(errs...)
}

// msTime formats a mark for the keeper's logs (FormatMs), "none" for a
// mark never written.
func msTime(ms int64) string {
	if ms == 0 {
		return "none"
	}
	return FormatMs(ms)
}
