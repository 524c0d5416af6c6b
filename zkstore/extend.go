package zkstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/lease"
)

// maxConflicts bounds the read-and-write rounds of one Extend or Release
// whose conditional write keeps finding the znode changed since its read.
const maxConflicts = 5

// Extend raises the lease's mark to markMs (never lowering it) and writes
// a fresh renewal value, returned in the lease's Renewal with the mark. It
// syncs and reads the znode, and writes only if the record still names
// l's holder, epoch and claim nonce and holds a renewal value this Store
// value wrote or sent for l (lease.Renewals), with a Set conditioned on
// the version read, so nothing can change between the check and the
// write. The mark written is the new expiry: a table's lease lasts as far
// as its mark, and leaseFor is not used.
//
// Errors: lease.ErrRestored if the znode shows the data went back in time
// since this Store value saw it (signs.go), or holds a renewal value from
// before this Store value's last one, and without a read for a lease
// claimed before this Store value (or a Keyspace sibling) noticed such a
// restore; lease.ErrQuarantined; lease.ErrLost (no znode, another holder,
// epoch or claim, or another renewal value: a second process renews the
// same claim); lease.ErrSchedule once the fleet schedule record
// (schedule.go) differs from the lease's schedule before the mark asked
// for (lease.CheckExtension): the record is read after the same sync, and
// the write's Multi checks its version, so no renewal commits on a
// schedule other than the one it compared. After any other error the
// write may or may not have committed: issue nothing past the previous
// mark.
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
	if what, at, fenced := s.id.watch.Restored(l.Claim); fenced {
		return nil, s.renewFailed(l, markMs, s.fenced(l, what, at))
	}
	nl, err := s.extend(ctx, l, max(markMs, l.MarkMs), schedule)
	if err != nil {
		return nil, s.renewFailed(l, markMs, err)
	}
	return nl, nil
}

// extend is Extend's read and conditional write, to target, of a lease
// claimed under schedule (canonical).
func (s *Store) extend(ctx context.Context, l *lease.Lease, target int64, schedule string) (*lease.Lease, error) {
	sp := s.before(l.Machine)
	renewal := s.renewals.Next(l)
	goneAt := int32(-1) // the version at which the claim's child was found gone
	for range maxConflicts {
		z, err := s.read(ctx, l.Machine)
		if err != nil {
			return nil, fmt.Errorf("zkstore: extend machine %d epoch %d: %w; retry", l.Machine, l.Token, err)
		}
		if err := s.owned(sp, l, z); err != nil {
			return nil, err
		}
		if z.rec.Renewal == renewal {
			// This very renewal committed (a write abandoned by its
			// context, sent when the session reconnected).
			s.renewals.Acked(l, renewal)
			return s.extended(l, z.rec), nil
		}
		if err := s.checkRenewal(sp, l, z.rec.Renewal); err != nil {
			return nil, err
		}
		if z.stat.version == goneAt {
			return nil, s.childGone(l, z)
		}
		fs, _, fleetVer, err := s.readSchedule(ctx)
		if err != nil {
			return nil, fmt.Errorf("zkstore: extend machine %d epoch %d: %w", l.Machine, l.Token, err)
		}
		if err := checkExtensionSchedule(schedule, fs, target); err != nil {
			return nil, fmt.Errorf("zkstore: extend machine %d epoch %d: %w; stop issuing on it and start again with the fleet's schedule",
				l.Machine, l.Token, err)
		}
		rec := z.rec
		rec.MarkMs, rec.Renewal = max(rec.MarkMs, target), renewal
		// The ops are made here, not in the call: a call abandoned by its
		// context may still be sent later, and must send what was
		// planned on this read.
		ops := append(s.keepOps(l.Machine, l.Claim, encode(rec), z.stat.version), s.scheduleCheck(fleetVer)...)
		res, err := call(ctx, func() ([]zk.MultiResponse, error) { return s.c.Multi(ops...) })
		switch {
		case err == nil:
			s.renewals.Acked(l, renewal)
			s.saw(sp, l.Machine, znode{exists: true, rec: rec, stat: statOf(s.multiStat(l.Machine, ops, res))})
			return s.extended(l, rec), nil
		case definite(err):
			// Changed since the read, or the claim's child is gone (another
			// claim replaced it, or the znode vanished): read again, and
			// judge what it shows.
			if childFailed(ops, res) {
				goneAt = z.stat.version
			}
			continue
		}
		// Unknown outcome: the write may have committed with its reply
		// lost. The re-read decides.
		z, rerr := s.reread(ctx, l.Machine)
		if rerr != nil {
			return nil, fmt.Errorf("zkstore: extend machine %d epoch %d to %s: %w; re-reading it failed too (%v): the outcome is "+
				"unknown: retry, and issue nothing past the mark %s", l.Machine, l.Token, lease.FormatMs(target), err, rerr, lease.FormatMs(l.MarkMs))
		}
		if oerr := s.owned(sp, l, z); oerr != nil {
			return nil, oerr
		}
		if z.rec.Renewal == renewal {
			s.log.Info("renewal adopted after an error of unknown outcome: the znode carries its renewal value", "machine", l.Machine,
				"epoch", l.Token, "error", err)
			s.renewals.Acked(l, renewal)
			return s.extended(l, z.rec), nil
		}
		if cerr := s.checkRenewal(sp, l, z.rec.Renewal); cerr != nil {
			return nil, cerr
		}
		return nil, fmt.Errorf("zkstore: extend machine %d epoch %d to %s: %w; the znode does not show it yet, and it may still commit: "+
			"retry, and issue nothing past the mark %s", l.Machine, l.Token, lease.FormatMs(target), err, lease.FormatMs(l.MarkMs))
	}
	return nil, fmt.Errorf("zkstore: extend machine %d epoch %d: its znode changed under %d reads in a row; retry", l.Machine, l.Token, maxConflicts)
}

// childGone is the error of a write on l's claim whose record is still
// l's, at the version read, while the claim's child znode is gone: deleted
// by hand, since a restore brings a record back with its child. The lease
// cannot be renewed or released; it runs out at its mark.
func (s *Store) childGone(l *lease.Lease, z znode) error {
	return fmt.Errorf("%w: machine %d region %d: the child znode %s of its claim is gone though the record is still this lease's "+
		"(deleted by hand?): no write can prove the claim, so stop issuing on it and claim again; create the child again (empty) to let "+
		"the number be claimed", lease.ErrLost, l.Machine, l.Region, s.childPath(l.Machine, l.Claim))
}

// extended is l after a renewal that left rec.
func (s *Store) extended(l *lease.Lease, rec record) *lease.Lease {
	nl := *l
	nl.MarkMs, nl.Renewal = rec.MarkMs, rec.Renewal
	return &nl
}

// owned judges znode z, read for a write on l after sp was taken
// (lease.ErrRestored for a sign that the data went back, signs.go), and
// says whether it still belongs to l: nil, or lease.ErrQuarantined or
// lease.ErrLost with what the znode says now.
func (s *Store) owned(sp span, l *lease.Lease, z znode) error {
	if err := s.saw(sp, l.Machine, z); err != nil {
		return err
	}
	return ownership(l, z)
}

// ownership says whether z still belongs to l.
func ownership(l *lease.Lease, z znode) error {
	r := z.rec
	switch {
	case !z.exists:
		return fmt.Errorf("%w: machine %d region %d has no znode (it was deleted, or the data restored from before its claim); "+
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
