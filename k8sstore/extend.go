package k8sstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// maxConflicts bounds the read-and-write rounds of one Extend or Release
// whose conditional write keeps finding the object changed since its read.
const maxConflicts = 5

// Extend raises the lease's mark to markMs (never lowering it) and writes
// a fresh renewal value, returned in the lease's Renewal with the mark. It
// reads the object, and writes only if the record still names l's holder,
// epoch and claim nonce and holds a renewal value this Store value wrote
// or sent for l (lease.Renewals), with one JSON patch that tests the
// resourceVersion and the exact record read (fence_k8srecord.go), so
// nothing can change between the check and the write, in this history or
// one an etcd restore brought back. The mark written is the new expiry: a
// table's lease lasts as far as its mark, and leaseFor is not used.
//
// Errors: lease.ErrRestored if the object shows the data went back in time
// since this Store value saw it (signs.go), or holds a renewal value from
// before this Store value's last one, and without a read for a lease
// claimed before this Store value (or a Keyspace sibling) noticed such a
// restore; lease.ErrQuarantined; lease.ErrLost (no object, another holder,
// epoch or claim, or another renewal value: a second process renews the
// same claim); lease.ErrSchedule when the fleet schedule record, read
// before the write, differs from the lease's before the new mark
// (fence_schedule.go). After any other
// error the write may or may not have committed: issue nothing past the
// previous mark.
func (s *Store) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	if err := s.checkLease(l); err != nil {
		return nil, err
	}
	schedule, err := lease.CanonicalSchedule(l.Schedule)
	if err != nil {
		return nil, fmt.Errorf("%w: lease of machine %d with schedule %q: %v", lease.ErrInvalid, l.Machine, l.Schedule, err)
	}
	target := max(markMs, l.MarkMs)
	if err := s.extendSchedule(ctx, l, schedule, target); err != nil { // fence_schedule.go
		return nil, s.renewFailed(l, markMs, err)
	}
	if what, at, fenced := s.id.watch.Restored(l.Claim); fenced {
		return nil, s.renewFailed(l, markMs, s.fenced(l, what, at))
	}
	nl, err := s.extend(ctx, l, target)
	if err != nil {
		return nil, s.renewFailed(l, markMs, err)
	}
	return nl, nil
}

// extend is Extend's read and conditional write, to target.
func (s *Store) extend(ctx context.Context, l *lease.Lease, target int64) (*lease.Lease, error) {
	sp := s.before(l.Machine)
	renewal := s.renewals.Next(l)
	for range maxConflicts {
		o, err := s.get(ctx, l.Machine)
		if err != nil {
			return nil, fmt.Errorf("k8sstore: extend machine %d epoch %d: %w; retry", l.Machine, l.Token, err)
		}
		if err := s.owned(sp, l, o); err != nil {
			return nil, err
		}
		if o.rec.Renewal == renewal {
			// This very renewal committed (a request whose reply was
			// lost, or that a retrying client sent late).
			s.renewals.Acked(l, renewal)
			return s.extended(l, o.rec), nil
		}
		if err := s.checkRenewal(sp, l, o.rec.Renewal); err != nil {
			return nil, err
		}
		rec := o.rec
		rec.MarkMs, rec.Renewal = max(rec.MarkMs, target), renewal
		// The patch is made here, from this read: a request held in the
		// client and sent late must send what was planned on it.
		ops := writeOps(o, rec, spec(rec, s.cfg.Clock.Now().WallMs, 0))
		got, err := s.patch(ctx, s.name(l.Machine), ops)
		switch {
		case err == nil:
			s.renewals.Acked(l, renewal)
			if w, derr := s.objectOf(got); derr == nil {
				_ = s.saw(sp, l.Machine, w)
			}
			return s.extended(l, rec), nil
		case errors.Is(err, ErrForbidden):
			return nil, fmt.Errorf("k8sstore: extend machine %d epoch %d: %w", l.Machine, l.Token, err)
		case definite(err):
			// Changed since the read (a failed test), or gone: read again,
			// and judge what it shows — unless the object is as read, and
			// the server refuses the write itself.
			if now, rerr := s.get(ctx, l.Machine); rerr == nil && refusedAsIs(o, now) {
				return nil, fmt.Errorf("k8sstore: extend machine %d epoch %d: the API server refused the write of an unchanged object: "+
					"%w; check the object (kubectl get lease %s -o yaml) and what admission webhooks change leases", l.Machine, l.Token, err, s.name(l.Machine))
			}
			continue
		}
		// Unknown outcome: the write may have committed with its reply
		// lost. The re-read decides.
		o, rerr := s.reread(ctx, l.Machine)
		if rerr != nil {
			return nil, fmt.Errorf("k8sstore: extend machine %d epoch %d to %s: %w; re-reading it failed too (%v): the outcome is "+
				"unknown: retry, and issue nothing past the mark %s", l.Machine, l.Token, lease.FormatMs(target), err, rerr, lease.FormatMs(l.MarkMs))
		}
		if oerr := s.owned(sp, l, o); oerr != nil {
			return nil, oerr
		}
		if o.rec.Renewal == renewal {
			s.log.Info("renewal adopted after an error of unknown outcome: the object carries its renewal value", "machine", l.Machine,
				"epoch", l.Token, "error", err)
			s.renewals.Acked(l, renewal)
			return s.extended(l, o.rec), nil
		}
		if cerr := s.checkRenewal(sp, l, o.rec.Renewal); cerr != nil {
			return nil, cerr
		}
		return nil, fmt.Errorf("k8sstore: extend machine %d epoch %d to %s: %w; the object does not show it yet, and it may still commit: "+
			"retry, and issue nothing past the mark %s", l.Machine, l.Token, lease.FormatMs(target), err, lease.FormatMs(l.MarkMs))
	}
	return nil, fmt.Errorf("k8sstore: extend machine %d epoch %d: its object changed under %d reads in a row; retry", l.Machine, l.Token, maxConflicts)
}

// extended is l after a renewal that left rec.
func (s *Store) extended(l *lease.Lease, rec record) *lease.Lease {
	nl := *l
	nl.MarkMs, nl.Renewal = rec.MarkMs, rec.Renewal
	return &nl
}

// owned judges object o, read for a write on l after sp was taken
// (lease.ErrRestored for a sign that the data went back, signs.go), and
// says whether it still belongs to l: nil, or lease.ErrQuarantined or
// lease.ErrLost with what the object says now.
func (s *Store) owned(sp span, l *lease.Lease, o object) error {
	if err := s.saw(sp, l.Machine, o); err != nil {
		return err
	}
	return ownership(l, o)
}

// ownership says whether o still belongs to l.
func ownership(l *lease.Lease, o object) error {
	r := o.rec
	switch {
	case !o.exists:
		return fmt.Errorf("%w: machine %d region %d has no object (it was deleted, or the data restored from before its claim); "+
			"stop issuing on it and claim again", lease.ErrLost, l.Machine, l.Region)
	case r.quarantined():
		return fmt.Errorf("%w: machine %d region %d was quarantined (epoch now %d); epoch %d may issue nothing past its mark %s",
			lease.ErrQuarantined, l.Machine, l.Region, r.Epoch, l.Token, lease.FormatMs(l.MarkMs))
	case r.Holder == "" && r.Epoch == l.Token:
		return fmt.Errorf("%w: machine %d region %d epoch %d was released; stop issuing on it and claim again", lease.ErrLost, l.Machine, l.Region, l.Token)
	case r.Holder != l.Holder || r.Epoch != l.Token:
		return fmt.Errorf("%w: machine %d region %d is now held by %q with epoch %d, not %q epoch %d; stop issuing on it and claim again",
			lease.ErrLost, l.Machine, l.Region, r.Holder, r.Epoch, l.Holder, l.Token)
	case otherClaim(r, l):
		return fmt.Errorf("%w: machine %d region %d is held under %q epoch %d by another claim than this lease's (the epoch repeated "+
			"after the data went back in time, or another claimer shares the holder name); stop issuing on it and claim again",
			lease.ErrLost, l.Machine, l.Region, r.Holder, r.Epoch)
	}
	return nil
}

// renewFailed logs a failed renewal and returns err. After lease.ErrLost,
// lease.ErrQuarantined or lease.ErrRestored the lease renews no more: its
// renewal values and its claim are forgotten.
func (s *Store) renewFailed(l *lease.Lease, markMs int64, err error) error {
	if errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrQuarantined) || errors.Is(err, lease.ErrRestored) {
		s.renewals.Forget(l)
		s.id.watch.Forget(l.Claim)
	}
	s.log.Warn("renewal failed", "machine", l.Machine, "region", s.region, "holder", l.Holder, "epoch", l.Token,
		"mark", lease.FormatMs(l.MarkMs), "wanted", lease.FormatMs(markMs), "error", err)
	return err
}

// checkLease refuses a lease this store cannot have made.
func (s *Store) checkLease(l *lease.Lease) error {
	if l == nil {
		return fmt.Errorf("%w: nil lease", lease.ErrInvalid)
	}
	if l.Region != s.region {
		return fmt.Errorf("%w: lease of region %d given to the store of region %d: use the Store of its keyspace (Keyspace)",
			lease.ErrInvalid, l.Region, s.region)
	}
	return lease.CheckMachine(l.Machine, lease.Unlimited)
}
