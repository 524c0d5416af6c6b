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
)

// KeeperConfig configures a Keeper. The zero value of every field but Store is
// a working default; the timing defaults are etcd's (DESIGN.md §3). Table
// stores document their own (longer) timings.
type KeeperConfig struct {
	// Store is where numbers are leased. Required.
	Store Store
	// Holder is this holder's identity. Empty means ThisProcess().
	Holder string
	// Range is the machine numbers this holder's class may use. Nil means
	// 0–1023 (all of v1).
	Range *Range
	// Region is written into the leases (and v2 IDs).
	Region int
	// Clock is the source of time; the generator must use the same one
	// (snowfence.New takes it from the keeper when its own Config.Clock is
	// nil), because the self-fence compares monotonic readings of both. Nil
	// means snowfence.SystemClock().
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
	// its mark has passed and the next holder need not wait.
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
	// RestoreMargin: after the store is found restored from an earlier
	// state, new leases start no earlier than the clock plus this. Zero
	// means Reserve + 1 s.
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

// StartKeeper checks cfg, claims a first number (retrying transient errors
// until ctx is done) and starts renewing it in the background. It fails with
// ErrNoFreeNumber if the whole range is taken.
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
		if errors.Is(err, ErrNoFreeNumber) {
			return nil, err
		}
		if err := cfg.Clock.Sleep(ctx, cfg.RenewEvery/4); err != nil {
			return nil, fmt.Errorf("lease: no number claimed before the context ended: last error: %v", k.Status().LastError)
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	go k.run(runCtx)
	return k, nil
}

func (c *KeeperConfig) defaults() error {
	if c.Store == nil {
		return fmt.Errorf("%w: KeeperConfig.Store is nil", ErrInvalid)
	}
	if c.Holder == "" {
		h, err := ThisProcess()
		if err != nil {
			return err
		}
		c.Holder = h
	}
	if c.Range == nil {
		c.Range = &Range{0, 1023}
	}
	if c.Clock == nil {
		c.Clock = snowfence.SystemClock()
		if c.Boottime == nil {
			c.Boottime = Boottime
		}
	}
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
	def(&c.RestoreMargin, c.Reserve+time.Second)
	def(&c.RequestTimeout, c.RenewEvery/2)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case c.Range.Lo < 0 || c.Range.Hi < c.Range.Lo:
		return fmt.Errorf("%w: machine range %s", ErrInvalid, c.Range)
	case c.RenewEvery >= c.SelfFence:
		return fmt.Errorf("%w: RenewEvery %s must be shorter than SelfFence %s, or every pause between renewals fences", ErrInvalid, c.RenewEvery, c.SelfFence)
	case float64(c.SelfFence)*1.08 >= float64(c.LeaseFor)*0.92:
		return fmt.Errorf("%w: SelfFence %s must stay below LeaseFor %s with clocks 8 %% fast or slow (SelfFence×1.08 < LeaseFor×0.92)", ErrInvalid, c.SelfFence, c.LeaseFor)
	case c.Margin < 0 || c.Margin >= c.Reserve:
		return fmt.Errorf("%w: Margin %s must be at least 0 and below Reserve %s", ErrInvalid, c.Margin, c.Reserve)
	}
	return nil
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

// Done is closed when the keeper has stopped (after Close).
func (k *Keeper) Done() <-chan struct{} { return k.done }

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
	k.mu.Lock()
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
		if errors.Is(err, ErrQuarantined) {
			// The number is still ours in the store, bound to an etcd
			// lease nobody renews now: give it up, recording the whole
			// reservation, so it is free the moment the quarantine is
			// lifted. If this fails, the lease expires on its own.
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
	return errors.Is(err, ErrLost) || errors.Is(err, ErrQuarantined) || errors.Is(err, ErrRestored)
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
	k.status.Losses++
	k.status.State = StateClaiming
	k.status.Machine, k.status.Token, k.status.MarkMs = -1, 0, 0
	k.status.LastError = err.Error()
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
	k.setWhy(errors.New("lease: keeper closed"))
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

func msTime(ms int64) string {
	if ms == 0 {
		return "none"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
