package k8sstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/snowfence/snowfence/lease"
)

// Release gives l's number up: it reads the object and, if the record
// still names l's holder, epoch and claim nonce and holds a renewal value
// this Store value wrote for l — its last, one whose reply was lost, or
// one from before its last (a record put back by a restore:
// lease.Renewals.Own; signs.go) — writes it free, with one JSON patch
// that tests the resourceVersion and the exact record read
// (fence_k8srecord.go). The mark it records is markMs, but at least
// l.StartMs and the mark before l's claim (floor_ms), so it may fall to
// the end of what l issued but never below a mark another holder left;
// a stored mark above l's own (written by hand) is kept. The number can be
// claimed at once; the next holder starts at or above the recorded mark.
//
// Errors: lease.ErrLost if l no longer holds the number, or the record
// holds a renewal value this Store value did not write (a second process
// renews the same claim: its mark stays); lease.ErrQuarantined;
// lease.ErrRestored if the object shows the data went back in time
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
	for range maxConflicts {
		o, err := s.get(ctx, l.Machine)
		if err != nil {
			return fmt.Errorf("k8sstore: release machine %d epoch %d: %w; retry, or let the number free itself at its mark", l.Machine, l.Token, err)
		}
		r := o.rec
		mine := o.exists && r.held() && r.Holder == l.Holder && r.Epoch == l.Token && !otherClaim(r, l)
		if !mine || !ownRenewal(own, r.Renewal) {
			// Not the record l's own writes left: say why, restore signs first.
			if err := s.owned(sp, l, o); err != nil {
				return err
			}
			if err := s.checkRenewal(sp, l, r.Renewal); err != nil {
				return err // a clone's renewal: its mark stays
			}
			return fmt.Errorf("k8sstore: release machine %d epoch %d: the object changed during the release; retry", l.Machine, l.Token)
		}
		last := max(markMs, l.StartMs, r.FloorMs)
		if r.MarkMs > max(l.MarkMs, last) {
			last = r.MarkMs // raised by someone else: keep it
		}
		rec := record{Epoch: r.Epoch, MarkMs: last, Claim: r.Claim, FloorMs: r.FloorMs, Release: nonce}
		ops := append(writeOps(o, rec, spec(rec, 0, 0)), s.endOps(l.Machine, o, lease.EndReleased, last, s.cfg.Clock.Now().WallMs)...)
		got, err := s.patch(ctx, s.name(l.Machine), ops)
		switch {
		case err == nil:
			if w, derr := s.objectOf(got); derr == nil {
				_ = s.saw(sp, l.Machine, w)
			}
			s.log.Info("released machine number", "machine", l.Machine, "region", s.region, "holder", l.Holder, "epoch", l.Token,
				"mark", lease.FormatMs(last))
			return nil
		case errors.Is(err, ErrForbidden):
			return fmt.Errorf("k8sstore: release machine %d epoch %d: %w", l.Machine, l.Token, err)
		case definite(err):
			if now, rerr := s.get(ctx, l.Machine); rerr == nil && refusedAsIs(o, now) {
				return fmt.Errorf("k8sstore: release machine %d epoch %d: the API server refused the write of an unchanged object: %w; "+
					"check the object (kubectl get lease %s -o yaml)", l.Machine, l.Token, err, s.name(l.Machine))
			}
			continue
		}
		o, rerr := s.reread(ctx, l.Machine)
		if rerr == nil && o.exists && o.rec.Holder == "" && o.rec.Epoch == l.Token && o.rec.Release == nonce {
			return nil // this release had committed
		}
		return fmt.Errorf("k8sstore: release machine %d epoch %d: %w (re-read: %v); it may have committed, and otherwise the number "+
			"frees itself at its mark", l.Machine, l.Token, err, rerr)
	}
	return fmt.Errorf("k8sstore: release machine %d epoch %d: its object changed under %d reads in a row; retry", l.Machine, l.Token, maxConflicts)
}
