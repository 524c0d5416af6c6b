package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfence/snowfence"
)

// A hold is a Keeper's lease for one layout step of its schedule: the number
// its grants carry for the IDs of instants in [fromMs, untilMs). It claims,
// renews and fences on its own; its grants never reach outside the window,
// so a grant handed to the generator for the wrong instant is refused there
// rather than minted on.
type hold struct {
	k      *Keeper
	index  int    // index into the schedule's steps
	layout string // the step's layout's name, for messages
	// fromMs and untilMs bound the instants the grants are for (Unix ms;
	// math.MinInt64 and math.MaxInt64 for open ends).
	fromMs, untilMs int64
	startMs         int64 // wall ms at which claiming starts (not renewing: see started)
	store           Store // the step's keyspace (KeyspaceOf)
	ownStore        bool  // store was opened by plan, closed by the Keeper
	keyspace        int
	rng             Range

	grant atomic.Pointer[snowfence.Grant]
	// woken is the grant whose limit last made MarkReached wake the
	// keeper's loop: one wake-up per grant published, however many callers
	// reach its limit (each would cost the loop a turn).
	woken atomic.Pointer[snowfence.Grant]
	// why says why there is no grant, as an error (never nil when read).
	why atomic.Pointer[error]
	// handedOut is the latest wall-clock millisecond GrantAt was asked
	// about the hold for (0: none): no ID was issued on its numbers at a
	// later instant, whatever the owner tells Close (fence_releasemark.go).
	handedOut atomic.Int64

	mu          sync.Mutex
	lease       *Lease
	status      Status
	exclude     []int
	floorMs     int64         // after a restore: leases start at or above this
	noticeMs    int64         // the lease held issues from here on (noticeFloor of its claim)
	noticeMono  time.Duration // and from this monotonic reading on
	lastAckBoot time.Duration
	lastAckMono time.Duration // the monotonic reading of the same renewal
	// failedSinceAck counts the renewals failed since the last acknowledged
	// one, failedErr is the last of them: the watchdog's fence says the
	// store is failing rather than blame a suspend (checkBoot).
	failedSinceAck int
	failedErr      string
	closed         bool  // Close, or the end of the window, stopped it
	claimErr       error // the last claim's error while no lease is held (claimloop.go)
}

func (h *hold) setWhy(err error) { h.why.Store(&err) }

// placement is the hold's range and region for the instants from max(now,
// fromMs) to untilMs.
func (h *hold) placement(nowMs int64) snowfence.Placement {
	p := snowfence.Placement{Lo: h.rng.Lo, Hi: h.rng.Hi, Region: h.k.cfg.Region, From: time.UnixMilli(max(nowMs, h.fromMs))}
	if h.untilMs != math.MaxInt64 {
		p.Until = time.UnixMilli(h.untilMs)
	}
	return p
}

// Status returns the hold's snapshot.
func (h *hold) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.status
	if s.State == StateHeld && h.grant.Load() == nil {
		s.State = StateFenced
	}
	return s
}

// waitAfter is how long the hold waits after a step that returned err.
func (h *hold) waitAfter(err error) time.Duration {
	c := &h.k.cfg
	switch {
	case err == nil:
		return c.RenewEvery
	case errors.Is(err, ErrSchedule):
		// The fleet schedule differs from this holder's: only an
		// operator changes that. Ask again at the renewal pace.
		return c.RenewEvery
	case isFinal(err):
		return 0 // lost: claim another number at once
	default:
		// The store is slow or down: retry sooner, so that an outage
		// shorter than the self-fence window costs no refusal.
		return c.RenewEvery / 4
	}
}

// started reports whether the hold has begun: it holds a lease, or has
// claimed one before. The keeper's loop holds a hold off until its start
// instant only before that.
func (h *hold) started() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease != nil || h.status.Claims > 0
}

// step renews the lease held, or claims one when none is.
func (h *hold) step(ctx context.Context) error {
	h.mu.Lock()
	held := h.lease != nil
	h.mu.Unlock()
	if held {
		return h.renew(ctx)
	}
	return h.claim(ctx)
}

// checkBoot is the watchdog's check of this hold: the grant is withdrawn
// when the last acknowledged renewal is older than SelfFence on the boot
// clock.
func (h *hold) checkBoot() {
	h.mu.Lock()
	defer h.mu.Unlock()
	age := h.k.boot() - h.lastAckBoot
	if h.lease != nil && h.lastAckBoot != 0 && age >= h.k.cfg.SelfFence && h.grant.Load() != nil {
		h.grant.Store(nil)
		why := h.overdueWhy(age, h.k.cfg.Clock.Now().Mono-h.lastAckMono)
		h.setWhy(fmt.Errorf("%w: %s", snowfence.ErrFenced, why))
		h.k.log.Warn("self-fenced: renewal overdue on CLOCK_BOOTTIME", "machine", h.lease.Machine, "token", h.lease.Token, "age", age, "why", why)
	}
}

// overdueWhy says why no renewal was acknowledged for age on the boot
// clock, monoAge on the monotonic one (which stops while the host is
// suspended, as the boot clock does not): a suspend when the monotonic age
// alone is within the self-fence window; else the renewals are failing —
// the store is unreachable or slow — and it names the last error. Called
// with h.mu held.
func (h *hold) overdueWhy(age, monoAge time.Duration) string {
	if monoAge < h.k.cfg.SelfFence {
		return fmt.Sprintf("no renewal acknowledged for %s on the boot clock, %s of it while the host was suspended "+
			"(the boot clock ran that much ahead of the monotonic one); issuing resumes after the next renewal",
			age.Round(time.Millisecond), (age - monoAge).Round(time.Millisecond))
	}
	failing := "the renewal sent has had no answer yet"
	if h.failedSinceAck > 0 {
		failing = fmt.Sprintf("%d renewals failed since, the last with: %s", h.failedSinceAck, h.failedErr)
	}
	return fmt.Sprintf("no renewal acknowledged for %s: renewals are failing, the lease store is unreachable or slow (%s); "+
		"issuing resumes after the next successful renewal", monoAge.Round(time.Millisecond), failing)
}

// claim claims a number and reserves its first stretch of time.
func (h *hold) claim(ctx context.Context) error {
	c := &h.k.cfg
	r := c.Clock.Now()
	if err := h.k.hw.load(c, h.k.log, r.WallMs); err != nil {
		h.mu.Lock()
		h.status.LastError = err.Error()
		h.mu.Unlock()
		return err
	}
	h.mu.Lock()
	req := ClaimRequest{
		Holder:   c.Holder,
		Range:    h.rng,
		NowMs:    r.WallMs,
		LeaseFor: c.LeaseFor,
		MaxAhead: c.MaxAhead,
		Exclude:  append([]int(nil), h.exclude...),
		Schedule: c.Schedule.String(),
	}
	req.RestoreWindow = c.claimRestoreWindow()
	h.mu.Unlock()
	// Close does not cancel a claim in flight (WithoutCancel): a claim the
	// store applied whose reply a cancel cut off would leave the number
	// held, by nobody, until its lease expired. Close waits for the reply
	// instead, at most RequestTimeout, and the closed check below gives
	// the number up.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.RequestTimeout)
	l, err := h.store.Claim(cctx, req)
	cancel()
	if errors.Is(err, ErrNoFreeNumber) && c.MaxWait > c.MaxAhead && ctx.Err() == nil {
		// Every number is held, or its mark is far ahead of this clock
		// (after raise-marks, say): take one whose mark is within
		// MaxWait, and let the generator wait for it, rather than fail.
		// The number just lost is no longer excluded either.
		req.MaxAhead, req.Exclude = c.MaxWait, nil
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.RequestTimeout)
		l, err = h.store.Claim(cctx, req)
		cancel()
	}
	// The claim has committed by now: a running holder of the number
	// (possible after a restore of the store) stops issuing within its
	// notice window from here.
	returned := c.Clock.Now()
	h.mu.Lock()
	h.exclude = nil // avoid the lost number once, not for ever
	h.mu.Unlock()
	if err != nil {
		if h.keyspace != c.Region {
			// The store names its keyspace as its region: say which.
			err = fmt.Errorf("layout %s's numbers of region %d (keyspace %d): %w", h.layout, c.Region, h.keyspace, err)
		}
		h.mu.Lock()
		h.status.LastError = err.Error()
		switch {
		case h.closed:
			// Close ran while the claim was in flight (and canceled it):
			// the refusal stays the one Close set, errClosed.
		case h.status.Claims == 0 && h != h.k.holds[0]:
			// Never held: the generator's refusal at the cutover says
			// why there is no number for the new layout.
			h.setWhy(fmt.Errorf("%w for layout %s, in force from %s: the last claim failed (retrying): %w", errNotYet, h.layout, msTime(h.fromMs), err))
		case h.status.Claims == 0:
			// The keeper's first claim: the generator's refusal says why
			// there is no number yet (every one held, for a spare).
			h.setWhy(fmt.Errorf("%w: the last claim failed (retrying): %w", errNotYet, err))
		}
		h.mu.Unlock()
		level := slog.LevelWarn
		if errors.Is(err, ErrNoFreeNumber) {
			level = slog.LevelDebug // a spare's wait is logged at the claim loop's own pace (claimloop.go)
		}
		h.k.log.Log(ctx, level, "claim failed", "holder", c.Holder, "layout", h.layout, "range", h.rng.String(), "error", err)
		return err
	}
	if l.Region != h.keyspace {
		h.releaseUnused(ctx, l)
		return fmt.Errorf("%w: the store leased machine %d in keyspace %d, but this keeper leases layout %s's numbers of region %d in keyspace %d; give the store and the keeper the same region",
			ErrInvalid, l.Machine, l.Region, h.layout, c.Region, h.keyspace)
	}
	h.mu.Lock()
	if h.closed {
		// Close ran while the claim was in flight: it found no lease to
		// release. Give this one up at once rather than hold it until
		// its lease expires.
		h.mu.Unlock()
		h.releaseUnused(ctx, l)
		h.k.log.Info("released a number claimed while the keeper closed", "machine", l.Machine, "token", l.Token)
		return errClosed
	}
	h.lease = l
	h.noticeMs, h.noticeMono = h.noticeFloor(returned)
	from := max(l.StartMs, h.noticeMs)
	h.exclude = nil
	h.status.Claims++
	h.status.State = StateHeld
	h.status.Machine, h.status.Token = l.Machine, l.Token
	h.mu.Unlock()
	h.k.log.Debug("claimed machine number", "machine", l.Machine, "layout", h.layout, "holder", l.Holder, "token", l.Token,
		"stored_mark", msTime(l.MarkMs), "start", msTime(l.StartMs), "issues_from", msTime(from))
	// Reserve time before issuing anything: the generator gets no grant
	// until this extension is acknowledged.
	return h.renew(ctx)
}

// renew extends the mark ahead of the clock, compared on the token, and
// publishes the new grant. After an error of unknown outcome it re-reads the
// store before deciding.
func (h *hold) renew(ctx context.Context) error {
	c := &h.k.cfg
	h.mu.Lock()
	l := h.lease
	h.mu.Unlock()
	if l == nil {
		return errNotYet
	}
	r := c.Clock.Now()
	var sendBoot time.Duration
	if h.k.boot != nil {
		sendBoot = h.k.boot()
	}
	mark := max(r.WallMs+c.Reserve.Milliseconds(), l.MarkMs, l.StartMs+1)
	cctx, cancel := context.WithTimeout(ctx, c.RequestTimeout)
	nl, err := h.store.Extend(cctx, l, mark, c.LeaseFor)
	cancel()
	if err != nil && !isFinal(err) && ctx.Err() == nil {
		nl, err = h.reread(ctx, l, mark, err)
	}
	switch {
	case err == nil:
		if herr := h.k.hw.reserve(nl.MarkMs); herr != nil {
			// The grant ends at the mark recorded before (renewed).
			h.mu.Lock()
			h.status.LastError = herr.Error()
			h.mu.Unlock()
			h.k.log.Warn("high-water mark not recorded; issuing stops at the one recorded until a renewal records it",
				"machine", nl.Machine, "error", herr)
		}
		h.renewed(nl, r, sendBoot)
		return nil
	case isFinal(err):
		h.lose(l, err)
		if errors.Is(err, ErrQuarantined) || errors.Is(err, ErrSchedule) {
			// The number is still ours in the store, bound to a lease
			// nobody renews now: give it up, recording the whole
			// reservation, so it is free the moment the quarantine is
			// lifted (or for a holder on the fleet's schedule). If this
			// fails, the lease expires on its own.
			rctx, cancel := context.WithTimeout(ctx, c.RequestTimeout)
			if rerr := h.store.Release(rctx, l, l.MarkMs); rerr != nil {
				h.k.log.Warn("release of the quarantined number failed; it frees itself when its lease expires", "machine", l.Machine, "error", rerr)
			}
			cancel()
		}
		return err
	default:
		h.mu.Lock()
		h.status.RenewFailures++
		h.status.LastError = err.Error()
		h.failedSinceAck++
		h.failedErr = err.Error()
		h.mu.Unlock()
		h.k.log.Warn("renewal failed; issuing continues until the self-fence or the mark", "machine", l.Machine,
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
// a mark at least the one asked for. A read that shows the store went back
// in time (ErrRestored from Get) loses the lease as a restore. A record
// with another renewal value than the lease's (Lease.Renewal) is never
// taken for this extension's: the store, which remembers the values it
// sent, is asked again.
func (h *hold) reread(ctx context.Context, l *Lease, mark int64, cause error) (*Lease, error) {
	cctx, cancel := context.WithTimeout(ctx, h.k.cfg.RequestTimeout)
	rec, err := h.store.Get(cctx, l.Machine)
	cancel()
	switch {
	case rereadRestored(err):
		// The store saw, in the record it read, that it went back in time
		// since it last saw it (the table stores compare every read with
		// the rows they saw): the lease is gone, and what it reserved may
		// be too.
		return nil, fmt.Errorf("%w (re-reading the record after: %v)", err, cause)
	case err != nil:
		return nil, fmt.Errorf("%w (and re-reading the record failed: %v)", cause, err)
	case rec.Quarantined:
		return nil, fmt.Errorf("%w: machine %d", ErrQuarantined, l.Machine)
	case rec.Holder != l.Holder || rec.Token != l.Token:
		return nil, fmt.Errorf("%w: machine %d is now held by %q with token %d", ErrLost, l.Machine, rec.Holder, rec.Token)
	case otherClaim(rec, l):
		// Same holder name and token, another claim: a token repeated
		// after the store went back in time, or another keeper's claim
		// under a shared holder name.
		return nil, fmt.Errorf("%w: machine %d is held under %q token %d by another claim (%s, not this lease's %s)",
			ErrLost, l.Machine, rec.Holder, rec.Token, rec.Claim, l.Claim)
	case otherRenewal(rec, l):
		// A renewal value this lease did not write: this extension's own,
		// whose reply was lost, or a second process's renewing the same
		// claim (a clone). Only the store knows the values it sent: ask it
		// again at once, and let its compare decide.
		cctx, cancel := context.WithTimeout(ctx, h.k.cfg.RequestTimeout)
		defer cancel()
		nl, err := h.store.Extend(cctx, l, mark, h.k.cfg.LeaseFor)
		if err != nil && !isFinal(err) {
			return nil, fmt.Errorf("%w (the record carries another renewal value than this lease's, and extending again to decide failed: %v)", cause, err)
		}
		return nl, err
	case rec.MarkMs >= mark:
		nl := *l
		nl.MarkMs = rec.MarkMs
		return &nl, nil
	}
	return nil, cause
}

// renewed publishes the grant for an acknowledged extension sent at the
// reading sent. The grant starts no earlier than the window and ends no
// later: IDs on this number are for the hold's layout only.
func (h *hold) renewed(l *Lease, sent snowfence.Reading, sendBoot time.Duration) {
	c := &h.k.cfg
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.lease = l
	h.lastAckBoot, h.lastAckMono = sendBoot, sent.Mono
	h.failedSinceAck, h.failedErr = 0, ""
	h.status.State = StateHeld
	h.status.MarkMs = l.MarkMs
	h.status.LastRenewal = time.UnixMilli(sent.WallMs).UTC()
	start, limit := max(l.StartMs, h.floorMs, h.noticeMs, h.k.hw.floor()), h.k.hw.limit(l.MarkMs-c.Margin.Milliseconds())
	start, limit = h.boundToLayout(start, limit)
	h.grant.Store(&snowfence.Grant{
		Machine:       l.Machine,
		Region:        c.Region,
		Token:         l.Token,
		StartMs:       start,
		LimitMs:       limit,
		RenewedAt:     sent.Mono,
		RenewedWallMs: sent.WallMs,
		SelfFence:     c.SelfFence,
		StartMono:     h.noticeMono,
	})
}

// lose drops a lease that is certainly gone: the generator stops at once, and
// the next round claims a different number.
func (h *hold) lose(l *Lease, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.grant.Store(nil)
	h.status.Losses++
	h.status.LastError = err.Error()
	if h.closed {
		// Close withdrew the grant already; the hold stays closed.
		return
	}
	h.setWhy(fmt.Errorf("%w (claiming another number)", err))
	if errors.Is(err, ErrRestored) {
		// Marks in the restored store may be below timestamps already
		// issued; start every later lease above anything that may have
		// been reserved before the restore.
		h.floorMs = max(h.floorMs, l.MarkMs, h.k.cfg.Clock.Now().WallMs+h.k.cfg.RestoreMargin.Milliseconds())
	}
	if h.lease == l {
		h.lease = nil
	}
	h.exclude = []int{l.Machine}
	h.status.State = StateClaiming
	h.status.Machine, h.status.Token, h.status.MarkMs = -1, 0, 0
	h.k.log.Error("lease lost; stopped issuing on it", "machine", l.Machine, "holder", l.Holder, "token", l.Token,
		"mark", msTime(l.MarkMs), "error", err)
}

// shut stops the hold: the generator refuses on it from now on, and a claim
// in flight is given up when it returns. It returns the lease held, or nil,
// for the caller to release (releaseHeld); only the first call of a hold's
// life returns it, so retire and Close never both release.
func (h *hold) shut() *Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil // shut before (retired, or Close): that one releases
	}
	h.closed = true
	h.grant.Store(nil)
	h.setWhy(errClosed)
	l := h.lease
	h.lease = nil
	h.status.State = StateClosed
	return l
}

// retire ends a hold whose window has passed: its number is released with
// the cutover as its mark (or the reservation, if it ends first), above
// every ID issued on it: its grants end there. The end of the last ID
// issued, which only the owner of the generator knows, is not needed: no
// ID of this layout is issued at or after the cutover.
func (h *hold) retire(ctx context.Context) {
	l := h.shut()
	if l == nil {
		return
	}
	h.setWhy(fmt.Errorf("%w: layout %s ended at %s; its number was released", snowfence.ErrFenced, h.layout, msTime(h.untilMs)))
	h.releaseHeld(ctx, l, UnknownIssued)
}

// releaseHeld releases l, the lease shut took, with lastIssued as its mark
// (releaseMark), within the hold's window. The grant is withdrawn first, so
// nothing is issued on l while it is released.
func (h *hold) releaseHeld(ctx context.Context, l *Lease, lastIssued int64) error {
	mark := min(releaseMark(l, lastIssued), max(h.untilMs, l.StartMs))
	cctx, cancel := context.WithTimeout(ctx, h.k.cfg.RequestTimeout)
	defer cancel()
	if err := h.store.Release(cctx, l, mark); err != nil {
		h.k.log.Warn("release failed; the number frees itself when its lease expires", "machine", l.Machine,
			"holder", l.Holder, "token", l.Token, "error", err)
		return err
	}
	h.k.log.Info("released machine number", "machine", l.Machine, "layout", h.layout, "holder", l.Holder, "token", l.Token, "mark", msTime(mark))
	return nil
}

// releaseUnused releases a lease under which nothing was issued, keeping
// its mark, on a context of its own (ctx may be done).
func (h *hold) releaseUnused(ctx context.Context, l *Lease) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.k.cfg.RequestTimeout)
	defer cancel()
	if err := h.store.Release(cctx, l, max(l.MarkMs, l.StartMs)); err != nil {
		h.k.log.Warn("release of an unused number failed; it frees itself when its lease expires", "machine", l.Machine, "token", l.Token, "error", err)
	}
}
