package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/internal/tablewatch"
	"github.com/snowfence/snowfence/lease"
)

// Extend raises the lease's mark (lease_expiry) to markMs, never lowering
// it, with one conditional update that succeeds only if the row still
// names l's holder, epoch and claim nonce, its mark is no lower than the
// one this Store value last saw under l's claim (signs.go), the row's
// renewal value is one this Store value wrote or sent for l
// (lease.Renewals), the fleet schedule stored is still l.Schedule, and the
// server is still the cluster and timeline the origin row records; it
// writes a fresh renewal value, even when the mark is already past markMs,
// returned in the lease's Renewal with the mark. If no row changed it
// re-reads the row to say why: lease.ErrRestored (the server changed:
// failover, recovery, another cluster — or a restore another claimer
// recorded fenced this lease, or the row shows the table went back in time
// since this Store value saw it, signs.go, or it holds a renewal value
// from before this Store value's last one), lease.ErrRestored too without
// a write for a lease claimed before this Store value noticed such a
// restore, lease.ErrQuarantined, lease.ErrLost (another holder or epoch,
// no row, fenced by RaiseMarks, or another renewal value: a second process
// renews the same claim), lease.ErrSchedule, or — all match now — an error
// to retry.
//
// leaseFor is not used: a table's lease lasts as far as its mark, so the
// mark asked for is the new expiry. After any other error the update may
// or may not have committed; issue nothing past the previous mark.
func (s *Store) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	if err := s.checkLease(l); err != nil {
		return nil, err
	}
	schedule, err := lease.CanonicalSchedule(l.Schedule)
	if err != nil {
		return nil, fmt.Errorf("%w: lease of machine %d with schedule %q: %v", lease.ErrInvalid, l.Machine, l.Schedule, err)
	}
	if what, at, fenced := s.watch.Restored(l.Claim); fenced {
		return nil, s.renewFailed(l, markMs, tablewatch.Fenced(s.name, l, what, at))
	}
	nl, err := s.extend(ctx, l, max(markMs, l.MarkMs), schedule, schedule, false)
	if errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrQuarantined) || errors.Is(err, lease.ErrRestored) {
		s.watch.Forget(l.Claim)
	}
	return nl, err
}

// extend runs the extension of l to target, the statement comparing the
// stored fleet schedule with fleet: the lease's own schedule (own), or on a
// retry the fleet's as read, once it was found to agree with own until
// target.
func (s *Store) extend(ctx context.Context, l *lease.Lease, target int64, own, fleet string, retried bool) (*lease.Lease, error) {
	var got *int64
	var same bool
	var id identity
	sp := s.before(l.Machine)
	// The mark last seen under this claim: never renewed from below it.
	keep := sp.Held(l.Machine, l.Token, l.Claim)
	accepted := s.renewals.Accepted(l)
	renewal := s.renewals.Next(l)
	err := s.ownTransaction(ctx, fmt.Sprintf("extend machine %d epoch %d", l.Machine, l.Token), func(c *pgxpool.Conn) error {
		return c.QueryRow(ctx, s.queries.extend, s.region, l.Machine, l.Holder, int64(l.Token), target, fleet, l.Claim, keep, renewal, accepted).Scan(
			&got, &same, &id.sysid, &id.tl, &id.oldSysid, &id.oldTl)
	})
	switch {
	case errors.Is(err, lease.ErrInvalid):
		return nil, s.renewFailed(l, target, fmt.Errorf("%w; issue nothing past the previous mark", err)) // nothing was sent
	case err != nil:
		return nil, s.renewFailed(l, target, fmt.Errorf("pgstore: extend machine %d epoch %d to %s: %w; the update may have committed: "+
			"re-read with Get before deciding, and issue nothing past the previous mark meanwhile", l.Machine, l.Token, lease.FormatMs(target), s.schemaErr(err)))
	case got != nil:
		s.renewals.Acked(l, renewal)
		nl := *l
		nl.MarkMs, nl.Renewal = *got, renewal
		s.saw(sp, l.Machine, row{machine: l.Machine, holder: l.Holder, expiryMs: *got, epoch: int64(l.Token), nonce: l.Claim, renewal: renewal}, true)
		return &nl, nil
	case !same:
		return nil, s.renewFailed(l, target, restoredErr(l, id))
	}
	r, ok, err := s.read(ctx, l.Machine)
	if err != nil {
		return nil, s.renewFailed(l, target, fmt.Errorf("pgstore: extend machine %d epoch %d: the update changed nothing, and re-reading "+
			"the row to learn why failed: %w; retry", l.Machine, l.Token, err))
	}
	if err := s.saw(sp, l.Machine, r, ok); err != nil {
		return nil, s.renewFailed(l, target, err)
	}
	if err := s.ownership(l, r, ok); err != nil {
		return nil, s.renewFailed(l, target, err)
	}
	if err := s.checkRenewal(sp, l, r.renewal); err != nil {
		return nil, s.renewFailed(l, target, err)
	}
	if nl, err := s.extendUnderMovedFleet(ctx, l, target, own, fleet, retried); nl != nil || err != nil {
		return nl, err
	}
	return nil, s.renewFailed(l, target, fmt.Errorf("pgstore: extend machine %d epoch %d: the update changed nothing, yet the row read "+
		"after it still belongs to the lease (it changed in between); retry", l.Machine, l.Token))
}

// ownership says whether row r (ok false: no row) still belongs to l:
// lease.ErrQuarantined, lease.ErrLost, or nil.
func (s *Store) ownership(l *lease.Lease, r row, ok bool) error {
	switch {
	case ok && r.quarantined():
		return fmt.Errorf("%w: machine %d region %d was quarantined by an operator (epoch now %d); epoch %d may issue nothing "+
			"past its mark %s (unquarantine it to make it claimable again)", lease.ErrQuarantined, l.Machine, l.Region, r.epoch, l.Token, lease.FormatMs(l.MarkMs))
	case !ok:
		return fmt.Errorf("%w: machine %d region %d has no row (the table was emptied or restored); stop issuing on it and claim again",
			lease.ErrLost, l.Machine, l.Region)
	case r.holder == "" && r.epoch == int64(l.Token)+1 && r.nonce == fencedByRestore:
		return fmt.Errorf("%w: machine %d region %d epoch %d was fenced when a claimer found the server on another cluster or "+
			"timeline than the table was (a failover, a recovery or a restore; acknowledged marks may have been lost): stop issuing "+
			"on it and claim again", lease.ErrRestored, l.Machine, l.Region, l.Token)
	case r.holder == "" && r.epoch == int64(l.Token)+1 && r.nonce == fencedByRaise:
		return fmt.Errorf("%w: machine %d region %d epoch %d was fenced by raise-marks (the operator's step after a restore): "+
			"stop issuing on it and claim again above the raised mark", lease.ErrLost, l.Machine, l.Region, l.Token)
	case r.holder == "" && r.epoch == int64(l.Token):
		return fmt.Errorf("%w: machine %d region %d epoch %d was released; stop issuing on it and claim again", lease.ErrLost, l.Machine, l.Region, l.Token)
	case r.holder != l.Holder || r.epoch != int64(l.Token):
		return fmt.Errorf("%w: machine %d region %d is now held by %q with epoch %d, not %q epoch %d; stop issuing on it and claim again",
			lease.ErrLost, l.Machine, l.Region, r.holder, r.epoch, l.Holder, l.Token)
	case otherClaim(r, l):
		return fmt.Errorf("%w: machine %d region %d is held under %q epoch %d by another claim than this lease's (the epoch repeated "+
			"after the table went back in time, or another claimer shares the holder name); stop issuing on it and claim again",
			lease.ErrLost, l.Machine, l.Region, r.holder, r.epoch)
	}
	return nil
}

// renewFailed logs a failed renewal and returns err. After lease.ErrLost,
// lease.ErrQuarantined or lease.ErrRestored the lease renews no more: its
// renewal values are forgotten.
func (s *Store) renewFailed(l *lease.Lease, markMs int64, err error) error {
	if errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrQuarantined) || errors.Is(err, lease.ErrRestored) {
		s.renewals.Forget(l)
	}
	s.log.Warn("renewal failed", "machine", l.Machine, "region", s.region, "holder", l.Holder, "epoch", l.Token,
		"mark", lease.FormatMs(l.MarkMs), "wanted", lease.FormatMs(markMs), "error", err)
	return err
}

// Release gives l's number up with one conditional update on holder,
// epoch, claim and renewal value (as Extend's, but a value this Store value
// wrote before its last one — a row put back by a restore — is taken too,
// lease.Renewals.Own: signs.go): holder ” and lease_expiry
// = max(markMs, floor_ms), so the mark may fall to the end of what this
// holder issued but never below a mark anyone else wrote, and a second
// process renewing the same claim (a clone) makes it fail with
// lease.ErrLost, leaving the mark that process holds. The number can be claimed at once; the next holder
// starts at or above the recorded mark. The same statement ends the
// claim's journal entry as released, at the recorded mark. Errors: lease.ErrLost if l no
// longer holds the number, lease.ErrQuarantined if it was quarantined,
// lease.ErrRestored if the row shows the table went back in time (signs.go).
// After any other error the release may or may not have committed; the
// number frees itself when its lease expires.
func (s *Store) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	if err := s.checkLease(l); err != nil {
		return err
	}
	var mark int64
	sp := s.before(l.Machine)
	err := s.ownTransaction(ctx, fmt.Sprintf("release machine %d epoch %d", l.Machine, l.Token), func(c *pgxpool.Conn) error {
		return c.QueryRow(ctx, s.queries.release, s.region, l.Machine, l.Holder, int64(l.Token), markMs, l.Claim, s.renewals.Own(l)).Scan(&mark)
	})
	switch {
	case errors.Is(err, lease.ErrInvalid):
		return err // nothing was sent
	case err == nil:
		s.watch.Forget(l.Claim)
		s.renewals.Forget(l)
		s.saw(sp, l.Machine, row{machine: l.Machine, expiryMs: mark, epoch: int64(l.Token), nonce: l.Claim}, true)
		s.log.Info("released machine number", "machine", l.Machine, "region", s.region, "holder", l.Holder, "epoch", l.Token, "mark", lease.FormatMs(mark))
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		r, ok, rerr := s.read(ctx, l.Machine)
		if rerr == nil {
			if err = s.saw(sp, l.Machine, r, ok); err == nil {
				err = s.ownership(l, r, ok)
			}
		}
		if rerr == nil && err == nil {
			err = s.checkRenewal(sp, l, r.renewal) // a clone's renewal: the mark stays
		}
		if errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrRestored) {
			s.watch.Forget(l.Claim)
			s.renewals.Forget(l)
		}
		if rerr != nil || err == nil { // err nil: it matched a moment later; ask to retry
			err = fmt.Errorf("pgstore: release machine %d epoch %d: the update changed nothing (%v); retry", l.Machine, l.Token, rerr)
		}
	default:
		err = fmt.Errorf("pgstore: release machine %d epoch %d: %w; it may have committed, and otherwise the number frees itself "+
			"when its lease expires", l.Machine, l.Token, s.schemaErr(err))
	}
	s.log.Warn("release failed", "machine", l.Machine, "region", s.region, "holder", l.Holder, "epoch", l.Token, "mark", lease.FormatMs(markMs), "error", err)
	return err
}
