package zkstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/lease"
)

// Release gives l's number up: it syncs and reads the znode and, if the
// record still names l's holder, epoch and claim nonce and holds a renewal
// value this Store value wrote for l — its last, one whose reply was
// lost, or one from before its last (a record put back by a restore:
// lease.Renewals.Own; signs.go) — writes it free, with a Set conditioned
// on the version read. The mark it records is markMs, but at least
// l.StartMs and the mark before l's claim (floor_ms), so it may fall to
// the end of what l issued but never below a mark another holder left;
// a stored mark above l's own (written by hand) is kept. The number can be
// claimed at once; the next holder starts at or above the recorded mark.
//
// Errors: lease.ErrLost if l no longer holds the number, or the record
// holds a renewal value this Store value did not write (a second process
// renews the same claim: its mark stays); lease.ErrQuarantined;
// lease.ErrRestored if the znode shows the data went back in time
// (signs.go). After any other error the release may or may not have
// committed; the number frees itself at its mark.
func (s *Store) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := s.checkLease(l); err != nil {
		return err
	}
	err := s.release(ctx, l, markMs)
	if err == nil || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrRestored) || errors.Is(err, lease.ErrQuarantined) {
		s.id.watch.Forget(l.Claim)
		s.renewals.Forget(l)
	}
	if err != nil {
		s.log.Warn("release failed", "machine", l.Machine, "region", s.region, "holder", l.Holder, "epoch", l.Token,
			"mark", lease.FormatMs(markMs), "error", err)
		return err
	}
	return nil
}

func (s *Store) release(ctx context.Context, l *lease.Lease, markMs int64) error {
	sp := s.before(l.Machine)
	own := s.renewals.Own(l)
	nonce := lease.NewNonce()
	goneAt := int32(-1) // the version at which the claim's child was found gone (extend)
	for range maxConflicts {
		z, err := s.read(ctx, l.Machine)
		if err != nil {
			return fmt.Errorf("zkstore: release machine %d epoch %d: %w; retry, or let the number free itself at its mark", l.Machine, l.Token, err)
		}
		r := z.rec
		mine := z.exists && r.held() && r.Holder == l.Holder && r.Epoch == l.Token && !otherClaim(r, l)
		if !mine || !ownRenewal(own, r.Renewal) {
			// Not the record l's own writes left: say why, restore signs first.
			if err := s.owned(sp, l, z); err != nil {
				return err
			}
			if err := s.checkRenewal(sp, l, r.Renewal); err != nil {
				return err // a clone's renewal: its mark stays
			}
			return fmt.Errorf("zkstore: release machine %d epoch %d: the znode changed during the release; retry", l.Machine, l.Token)
		}
		last := max(markMs, l.StartMs, r.FloorMs)
		if r.MarkMs > max(l.MarkMs, last) {
			last = r.MarkMs // raised by someone else: keep it
		}
		if z.stat.version == goneAt {
			return s.childGone(l, z)
		}
		rec := record{Epoch: r.Epoch, MarkMs: last, Claim: r.Claim, FloorMs: r.FloorMs, Release: nonce}
		ends, err := s.endOps(ctx, l.Machine, r, lease.EndReleased, last)
		if err != nil {
			return fmt.Errorf("zkstore: release machine %d epoch %d: %w; retry, or let the number free itself at its mark", l.Machine, l.Token, err)
		}
		// made here: see extend; the holding's journal entry ends in the same Multi
		ops := append(s.keepOps(l.Machine, l.Claim, encode(rec), z.stat.version), ends...)
		res, err := call(ctx, func() ([]zk.MultiResponse, error) { return s.c.Multi(ops...) })
		switch {
		case err == nil:
			s.saw(sp, l.Machine, znode{exists: true, rec: rec, stat: statOf(s.multiStat(l.Machine, ops, res))})
			s.log.Info("released machine number", "machine", l.Machine, "region", s.region, "holder", l.Holder, "epoch", l.Token,
				"mark", lease.FormatMs(last))
			return nil
		case definite(err):
			if childFailed(ops, res) {
				goneAt = z.stat.version
			}
			continue
		}
		z, rerr := s.reread(ctx, l.Machine)
		if rerr == nil && z.exists && z.rec.Holder == "" && z.rec.Epoch == l.Token && z.rec.Release == nonce {
			return nil // this release had committed
		}
		return fmt.Errorf("zkstore: release machine %d epoch %d: %w (re-read: %v); it may have committed, and otherwise the number "+
			"frees itself at its mark", l.Machine, l.Token, err, rerr)
	}
	return fmt.Errorf("zkstore: release machine %d epoch %d: its znode changed under %d reads in a row; retry", l.Machine, l.Token, maxConflicts)
}
