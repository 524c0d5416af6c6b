package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/revert"
)

// KeeperConfig configures a Keeper. The zero value of every field but Store is
// a working default; the timing defaults are etcd's: a 10 s lease renewed
// every 2 s, a 5 s self-fence (docs/design.md#timings). Table stores
// document their own (longer) timings.
type KeeperConfig struct {
	// Store is where numbers are leased. Required.
	Store Store
	// Holder is this holder's identity. It must be unique per process:
	// two processes given one holder string rely on the store's per-claim
	// nonces alone to tell their claims apart. Empty means ThisProcess()
	// followed by "/k<N>", N counting the keepers of this process, so that
	// two keepers of one process never share one.
	Holder string
	// Range is the machine numbers this holder's class may use. Nil means
	// 0–1023 (all of v1). Every layout of Schedule in force from the start
	// on must hold all of it (StartKeeper refuses it otherwise), so every
	// number claimed fits every layout in force while it is held.
	Range *Range
	// Region is the region whose numbers the store leases, written into
	// the grants (and v2 IDs). It must equal the store's region when the
	// store tells it (a Region() int method, as etcdstore's and pgstore's
	// have), and it must be 0 while a layout without region bits (v1) is
	// in force: the stores lease numbers per region, so two regions'
	// holders may hold the same number.
	Region int
	// Schedule is the layout schedule of this holder's generator. Every
	// claim carries it (ClaimRequest.Schedule) and the store refuses it,
	// with ErrSchedule, unless it equals the fleet schedule kept beside the
	// leases. snowfence.New takes it for a generator configured with none.
	// Zero means snowfence.DefaultSchedule() (v1).
	Schedule snowfence.Schedule
	// Clock is the source of time; the generator must use the same one
	// (snowfence.New takes it from the keeper when its own Config.Clock is
	// nil; ShareClock chooses it for a keeper and a generator configured
	// together), because the self-fence compares monotonic readings of
	// both. Nil means snowfence.SystemClock().
	Clock snowfence.Clock
	// LeaseFor is how long a lease lives in the store without renewal (the
	// etcd lease TTL). Zero means 10 s.
	LeaseFor time.Duration
	// RenewEvery is the renewal period. Zero means 2 s.
	RenewEvery time.Duration
	// SelfFence is how long after the send time of the last acknowledged
	// renewal the generator stops issuing. Zero means 5 s. It must be
	// shorter than LeaseFor by enough to hold with clocks 8 % fast or slow:
	// SelfFence × 1.08 < LeaseFor × 0.92.
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
	// self-fence watchdog. Nil means CLOCK_BOOTTIME when Clock is nil (the
	// system clock), and no watchdog with a custom Clock, whose monotonic
	// reading the generator already checks on every ID.
	Boottime func() time.Duration
	// Logger receives claims, renewal failures, losses and releases. Nil
	// discards them.
	Logger *slog.Logger
}

// A Keeper holds one machine number at a time: it claims one, renews it and
// its mark on a schedule, tells the generator its fence (it is the
// generator's snowfence.LeaseView), claims a different number after losing
// one, and releases on Close. It is safe for concurrent use.
type Keeper struct {
	cfg  KeeperConfig
	log  *slog.Logger
	boot func() time.Duration

	grant atomic.Pointer[snowfence.Grant]
	// why says why there is no grant, as an error (never nil when read).
	why atomic.Pointer[error]

	mu          sync.Mutex
	lease       *Lease
	status      Status
	exclude     []int
	floorMs     int64 // after a restore: leases start at or above this
	lastIssued  func() int64
	lastAckBoot time.Duration
	watchdogOn  bool

	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

var _ snowfence.LeaseView = (*Keeper)(nil)

// errNotYet is the reason before the first claim.
var errNotYet = errors.New("lease: no machine number claimed yet")

// errClosed is the reason after Close.
var errClosed = errors.New("lease: keeper closed")

// StartKeeper checks cfg, claims a first number (retrying transient errors
// until ctx is done) and starts renewing it in the background. It fails with
// ErrInvalid for a configuration it cannot use (including a range or region
// that a layout of cfg.Schedule in force from now on cannot hold: the error
// also matches snowfence.ErrPlacement), with ErrSchedule if the store's
// fleet schedule differs from cfg.Schedule, and with ErrNoFreeNumber if the
// whole range is taken. A number claimed before it fails is released.
func StartKeeper(ctx context.Context, cfg KeeperConfig) (*Keeper, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	k := &Keeper{cfg: cfg, log: cfg.Logger, done: make(chan struct{})}
	k.boot = cfg.Boottime
	if k.boot != nil {
		k.watchdogOn = true
	}
	k.status = Status{State: StateClaiming, Machine: -1, Region: cfg.Region, Holder: cfg.Holder}
	k.setWhy(errNotYet)
	for {
		err := k.step(ctx)
		if err == nil {
			break
		}
		if errors.Is(err, ErrNoFreeNumber) || errors.Is(err, ErrSchedule) || errors.Is(err, ErrInvalid) {
			k.abandon(ctx)
			return nil, err
		}
		if err := cfg.Clock.Sleep(ctx, cfg.RenewEvery/4); err != nil {
			k.abandon(ctx)
			return nil, fmt.Errorf("lease: no number claimed before the context ended: last error: %v", k.Status().LastError)
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	go k.run(runCtx)
	return k, nil
}

// abandon gives up a number claimed by a StartKeeper that fails after all,
// so that it does not stay held until its lease expires.
func (k *Keeper) abandon(ctx context.Context) {
	k.mu.Lock()
	l := k.lease
	k.lease = nil
	k.mu.Unlock()
	if l != nil {
		k.releaseUnused(ctx, l)
	}
}

// releaseUnused releases a lease under which nothing was issued, keeping
// its mark, on a context of its own (ctx may be done).
func (k *Keeper) releaseUnused(ctx context.Context, l *Lease) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.cfg.RequestTimeout)
	defer cancel()
	if err := k.cfg.Store.Release(cctx, l, max(l.MarkMs, l.StartMs)); err != nil {
		k.log.Warn("release of an unused number failed; it frees itself when its lease expires", "machine", l.Machine, "token", l.Token, "error", err)
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
	if c.Range == nil {
		c.Range = &Range{0, 1023}
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
	window := RestoreWindow(c.Reserve, c.SelfFence)
	if revert.Window {
		window = c.Reserve + time.Second // the old default, and no check
	}
	def(&c.RestoreMargin, window)
	def(&c.RequestTimeout, c.RenewEvery/2)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case c.Range.Lo < 0 || c.Range.Hi < c.Range.Lo:
		return fmt.Errorf("%w: machine range %s: write lo-hi with 0 ≤ lo ≤ hi", ErrInvalid, c.Range)
	case c.RenewEvery >= c.SelfFence:
		return fmt.Errorf("%w: RenewEvery %s must be shorter than SelfFence %s, or every pause between renewals fences", ErrInvalid, c.RenewEvery, c.SelfFence)
	case float64(c.SelfFence)*1.08 >= float64(c.LeaseFor)*0.92:
		return fmt.Errorf("%w: SelfFence %s must stay below LeaseFor %s with clocks 8 %% fast or slow (SelfFence×1.08 < LeaseFor×0.92)", ErrInvalid, c.SelfFence, c.LeaseFor)
	case c.Reserve > MaxReserve:
		return fmt.Errorf("%w: Reserve %s is longer than %s: a change of the fleet schedule gives holders only %s of notice, "+
			"and a mark reserved further ahead could outlast it; use a shorter Reserve (or LeaseFor)", ErrInvalid, c.Reserve, MaxReserve, MinScheduleNotice)
	case c.Margin < 0 || c.Margin >= c.Reserve:
		return fmt.Errorf("%w: Margin %s must be at least 0 and below Reserve %s", ErrInvalid, c.Margin, c.Reserve)
	case c.RestoreMargin < window && !revert.Window:
		return fmt.Errorf("%w: RestoreMargin %s is shorter than a cut-off holder may go on issuing: max(Reserve %s, SelfFence %s) × 1.1 + 1 s = %s; "+
			"leave it zero or make it at least that", ErrInvalid, c.RestoreMargin, c.Reserve, c.SelfFence, window)
	}
	if maxW := c.Store.MaxRestoreWindow(); !revert.Window && c.RestoreMargin > maxW {
		// After a restore the store floors every claim at its own
		// window, the longest any holder of it may have: a holder cut off
		// by the restore with a longer one could still be issuing when
		// another process's claim starts.
		return fmt.Errorf("%w: this keeper's restore window %s (max(Reserve %s, SelfFence %s) × 1.1 + 1 s, or RestoreMargin) is longer "+
			"than the %s this store keeps after a restore for every holder; shorten Reserve or SelfFence (or LeaseFor)",
			ErrInvalid, c.RestoreMargin, c.Reserve, c.SelfFence, maxW)
	}
	if r, ok := c.Store.(interface{ Region() int }); ok && r.Region() != c.Region {
		return fmt.Errorf("%w: KeeperConfig.Region %d differs from the store's region %d; give both the same", ErrInvalid, c.Region, r.Region())
	}
	now := time.UnixMilli(c.Clock.Now().WallMs)
	if err := c.Schedule.CheckPlacement(c.Range.Lo, c.Range.Hi, c.Region, now); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
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

// Grant implements snowfence.LeaseView: the grant in force, or nil and the
// reason there is none.
func (k *Keeper) Grant() (*snowfence.Grant, error) {
	if g := k.grant.Load(); g != nil {
		return g, nil
	}
	return nil, *k.why.Load()
}

func (k *Keeper) setWhy(err error) { k.why.Store(&err) }

// SetLastIssued tells the keeper how to learn the end of the last issued
// timestamp (snowfence.Generator.LastIssued), so Close records an exact mark.
// Without it Close records the whole reservation, which is safe but makes
// the next holder of the number pass it over until the clock catches up.
func (k *Keeper) SetLastIssued(f func() int64) {
	k.mu.Lock()
	k.lastIssued = f
	k.mu.Unlock()
}

// Status returns a snapshot for health checks and metrics.
func (k *Keeper) Status() Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.status
	if s.State == StateHeld && k.grant.Load() == nil {
		s.State = StateFenced
	}
	return s
}

// Lease returns the lease held now, or nil.
func (k *Keeper) Lease() *Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lease == nil {
		return nil
	}
	l := *k.lease
	return &l
}

// Clock returns the keeper's clock, which its generator must share.
func (k *Keeper) Clock() snowfence.Clock { return k.cfg.Clock }

// Schedule returns the layout schedule the keeper claims with; its
// generator must mint under the same one (snowfence.New takes it when its
// Config.Schedule is zero, and refuses a different one).
func (k *Keeper) Schedule() snowfence.Schedule { return k.cfg.Schedule }

// Placement implements snowfence.PlacedLease: the machine range the keeper
// claims from and the region of its grants.
func (k *Keeper) Placement() (lo, hi, region int) {
	return k.cfg.Range.Lo, k.cfg.Range.Hi, k.cfg.Region
}

// Closed returns a channel that is closed once Close has stopped the
// keeper's background loop; it closes while Close runs, before the number
// is released. It is not the Done of etcd's concurrency.Session, which
// closes when the lease is lost: a Keeper that loses its number stops the
// generator issuing on it and claims another, and runs until Close. A lost
// or overdue lease shows in Status (StateClaiming, StateFenced, Losses) and
// in the generator's Health.
func (k *Keeper) Closed() <-chan struct{} { return k.done }

// run renews on schedule, re-claims after a loss, and watches the self-fence
// deadline on the boot clock.
func (k *Keeper) run(ctx context.Context) {
	defer close(k.done)
	if k.watchdogOn {
		go k.watchdog(ctx)
	}
	wait := k.cfg.RenewEvery
	for {
		if err := k.cfg.Clock.Sleep(ctx, wait); err != nil {
			return
		}
		err := k.step(ctx)
		switch {
		case err == nil:
			wait = k.cfg.RenewEvery
		case errors.Is(err, ErrSchedule):
			// The fleet schedule differs from this holder's: only an
			// operator changes that. Ask again at the renewal pace.
			wait = k.cfg.RenewEvery
		case isFinal(err):
			wait = 0 // lost: claim another number at once
		default:
			// The store is slow or down: retry sooner, so that an outage
			// shorter than the self-fence window costs no refusal.
			wait = k.cfg.RenewEvery / 4
		}
	}
}

// step renews the lease held, or claims one when none is.
func (k *Keeper) step(ctx context.Context) error {
	k.mu.Lock()
	held := k.lease != nil
	k.mu.Unlock()
	if held {
		return k.renew(ctx)
	}
	return k.claim(ctx)
}

// watchdog fences the generator when the last acknowledged renewal, measured
// on the boot clock, is older than SelfFence: a host suspend stops the
// monotonic clock the generator checks, not the boot clock. It polls on real
// time because it watches the real host.
func (k *Keeper) watchdog(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		k.mu.Lock()
		age := k.boot() - k.lastAckBoot
		if k.lease != nil && k.lastAckBoot != 0 && age >= k.cfg.SelfFence && k.grant.Load() != nil {
			k.grant.Store(nil)
			k.setWhy(fmt.Errorf("%w: no renewal acknowledged for %s on the boot clock (the host may have been suspended)", snowfence.ErrFenced, age.Round(time.Millisecond)))
			k.log.Warn("self-fenced: renewal overdue on CLOCK_BOOTTIME", "machine", k.lease.Machine, "token", k.lease.Token, "age", age)
		}
		k.mu.Unlock()
	}
}

// claim claims a number and reserves its first stretch of time.
func (k *Keeper) claim(ctx context.Context) error {
	r := k.cfg.Clock.Now()
	k.mu.Lock()
	req := ClaimRequest{
		Holder:   k.cfg.Holder,
		Range:    *k.cfg.Range,
		NowMs:    r.WallMs,
		LeaseFor: k.cfg.LeaseFor,
		MaxAhead: k.cfg.MaxAhead,
		Exclude:  append([]int(nil), k.exclude...),
		Schedule: k.cfg.Schedule.String(),
	}
	if !revert.Window {
		req.RestoreWindow = k.cfg.RestoreMargin
	}
	k.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, k.cfg.RequestTimeout)
	l, err := k.cfg.Store.Claim(cctx, req)
	cancel()
	if errors.Is(err, ErrNoFreeNumber) && k.cfg.MaxWait > k.cfg.MaxAhead {
		// Every number is held, or its mark is far ahead of this clock
		// (after raise-marks, say): take one whose mark is within
		// MaxWait, and let the generator wait for it, rather than fail.
		// The number just lost is no longer excluded either.
		req.MaxAhead, req.Exclude = k.cfg.MaxWait, nil
		cctx, cancel := context.WithTimeout(ctx, k.cfg.RequestTimeout)
		l, err = k.cfg.Store.Claim(cctx, req)
		cancel()
	}
	k.mu.Lock()
	k.exclude = nil // avoid the lost number once, not for ever
	k.mu.Unlock()
	if err != nil {
		k.mu.Lock()
		k.status.LastError = err.Error()
		k.mu.Unlock()
		k.log.Warn("claim failed", "holder", k.cfg.Holder, "range", k.cfg.Range.String(), "error", err)
		return err
	}
	if l.Region != k.cfg.Region {
		k.releaseUnused(ctx, l)
		return fmt.Errorf("%w: the store leased machine %d in region %d, but this keeper is configured for region %d; give the store and the keeper the same region",
			ErrInvalid, l.Machine, l.Region, k.cfg.Region)
	}
	k.mu.Lock()
	if k.closed {
		// Close ran while the claim was in flight: it found no lease to
		// release. Give this one up at once rather than hold it until
		// its lease expires.
		k.mu.Unlock()
		k.releaseUnused(ctx, l)
		k.log.Info("released a number claimed while the keeper closed", "machine", l.Machine, "token", l.Token)
		return errClosed
	}
	k.lease = l
	k.exclude = nil
	k.status.Claims++
	k.status.State = StateHeld
	k.status.Machine, k.status.Token = l.Machine, l.Token
	k.mu.Unlock()
	k.log.Debug("claimed machine number", "machine", l.Machine, "holder", l.Holder, "token", l.Token,
		"stored_mark", msTime(l.MarkMs), "start", msTime(l.StartMs))
	// Reserve time before issuing anything: the generator gets no grant
	// until this extension is acknowledged.
	return k.renew(ctx)
}

// renew extends the mark ahead of the clock, compared on the token, and
// publishes the new grant. After an error of unknown outcome it re-reads the
// store before deciding.
func (k *Keeper) renew(ctx context.Context) error {
	k.mu.Lock()
	l := k.lease
	k.mu.Unlock()
	if l == nil {
		return errNotYet
	}
	r := k.cfg.Clock.Now()
	var sendBoot time.Duration
	if k.boot != nil {
		sendBoot = k.boot()
	}
	mark := max(r.WallMs+k.cfg.Reserve.Milliseconds(), l.MarkMs, l.StartMs+1)
	cctx, cancel := context.WithTimeout(ctx, k.cfg.RequestTimeout)
	nl, err := k.cfg.Store.Extend(cctx, l, mark, k.cfg.LeaseFor)
	cancel()
	if err != nil && !isFinal(err) && ctx.Err() == nil {
		nl, err = k.reread(ctx, l, mark, err)
	}
	switch {
	case err == nil:
		k.renewed(nl, r, sendBoot)
		return nil
	case isFinal(err):
		k.lose(l, err)
		if errors.Is(err, ErrQuarantined) || errors.Is(err, ErrSchedule) {
			// The number is still ours in the store, bound to a lease
			// nobody renews now: give it up, recording the whole
			// reservation, so it is free the moment the quarantine is
			// lifted (or for a holder on the fleet's schedule). If this
			// fails, the lease expires on its own.
			rctx, cancel := context.WithTimeout(ctx, k.cfg.RequestTimeout)
			if rerr := k.cfg.Store.Release(rctx, l, l.MarkMs); rerr != nil {
				k.log.Warn("release of the quarantined number failed; it frees itself when its lease expires", "machine", l.Machine, "error", rerr)
			}
			cancel()
		}
		return err
	default:
		k.mu.Lock()
		k.status.RenewFailures++
		k.status.LastError = err.Error()
		k.mu.Unlock()
		k.log.Warn("renewal failed; issuing continues until the self-fence or the mark", "machine", l.Machine,
			"holder", l.Holder, "token", l.Token, "mark", msTime(l.MarkMs), "error", err)
		return err
	}
}

// isFinal reports errors after which the lease is certainly gone.
func isFinal(err error) bool {
	return errors.Is(err, ErrLost) || errors.Is(err, ErrQuarantined) || errors.Is(err, ErrRestored) || errors.Is(err, ErrSchedule)
}

// reread decides an extension whose outcome is unknown from the stored
// record: it committed if the record still names this holder and token with
// a mark at least the one asked for.
func (k *Keeper) reread(ctx context.Context, l *Lease, mark int64, cause error) (*Lease, error) {
	cctx, cancel := context.WithTimeout(ctx, k.cfg.RequestTimeout)
	rec, err := k.cfg.Store.Get(cctx, l.Machine)
	cancel()
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w (and re-reading the record failed: %v)", cause, err)
	case rec.Quarantined:
		return nil, fmt.Errorf("%w: machine %d", ErrQuarantined, l.Machine)
	case rec.Holder != l.Holder || rec.Token != l.Token:
		return nil, fmt.Errorf("%w: machine %d is now held by %q with token %d", ErrLost, l.Machine, rec.Holder, rec.Token)
	case !revert.Nonce && rec.Claim != l.Claim:
		// Same holder name and token, another claim: a token repeated
		// after the store went back in time, or another keeper's claim
		// under a shared holder name.
		return nil, fmt.Errorf("%w: machine %d is held under %q token %d by another claim (%s, not this lease's %s)",
			ErrLost, l.Machine, rec.Holder, rec.Token, rec.Claim, l.Claim)
	case rec.MarkMs >= mark:
		nl := *l
		nl.MarkMs = rec.MarkMs
		return &nl, nil
	}
	return nil, cause
}

// renewed publishes the grant for an acknowledged extension sent at the
// reading sent.
func (k *Keeper) renewed(l *Lease, sent snowfence.Reading, sendBoot time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	k.lease = l
	k.lastAckBoot = sendBoot
	k.status.State = StateHeld
	k.status.MarkMs = l.MarkMs
	k.status.LastRenewal = time.UnixMilli(sent.WallMs).UTC()
	k.grant.Store(&snowfence.Grant{
		Machine:   l.Machine,
		Region:    l.Region,
		Token:     l.Token,
		StartMs:   max(l.StartMs, k.floorMs),
		LimitMs:   l.MarkMs - k.cfg.Margin.Milliseconds(),
		RenewedAt: sent.Mono,
		SelfFence: k.cfg.SelfFence,
	})
}

// lose drops a lease that is certainly gone: the generator stops at once, and
// the next round claims a different number.
func (k *Keeper) lose(l *Lease, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.grant.Store(nil)
	k.status.Losses++
	k.status.LastError = err.Error()
	if k.closed {
		// Close withdrew the grant already; the keeper stays closed.
		return
	}
	k.setWhy(fmt.Errorf("%w (claiming another number)", err))
	if errors.Is(err, ErrRestored) {
		// Marks in the restored store may be below timestamps already
		// issued; start every later lease above anything that may have
		// been reserved before the restore.
		k.floorMs = max(k.floorMs, l.MarkMs, k.cfg.Clock.Now().WallMs+k.cfg.RestoreMargin.Milliseconds())
	}
	if k.lease == l {
		k.lease = nil
	}
	k.exclude = []int{l.Machine}
	k.status.State = StateClaiming
	k.status.Machine, k.status.Token, k.status.MarkMs = -1, 0, 0
	k.log.Error("lease lost; stopped issuing on it", "machine", l.Machine, "holder", l.Holder, "token", l.Token,
		"mark", msTime(l.MarkMs), "error", err)
}

// Close stops renewing, makes the generator refuse, and releases the number,
// recording the end of the last issued timestamp as its mark. It waits for
// the background loop to stop.
func (k *Keeper) Close(ctx context.Context) error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	k.closed = true
	k.grant.Store(nil)
	k.setWhy(errClosed)
	l, lastIssued := k.lease, k.lastIssued
	k.lease = nil
	k.status.State = StateClosed
	k.mu.Unlock()
	k.cancel()
	<-k.done
	if l == nil {
		return nil
	}
	// The grant is withdrawn: any ID issued under it is already counted by
	// LastIssued, because the generator checks the grant and commits under
	// one lock.
	mark := l.MarkMs
	if lastIssued != nil {
		mark = min(max(lastIssued(), l.StartMs), l.MarkMs)
	}
	cctx, cancel := context.WithTimeout(ctx, k.cfg.RequestTimeout)
	defer cancel()
	if err := k.cfg.Store.Release(cctx, l, mark); err != nil {
		k.log.Warn("release failed; the number frees itself when its lease expires", "machine", l.Machine,
			"holder", l.Holder, "token", l.Token, "error", err)
		return err
	}
	k.log.Info("released machine number", "machine", l.Machine, "holder", l.Holder, "token", l.Token, "mark", msTime(mark))
	return nil
}

// msTime formats a mark for the keeper's logs (FormatMs), "none" for a
// mark never written.
func msTime(ms int64) string {
	if ms == 0 {
		return "none"
	}
	return FormatMs(ms)
}
