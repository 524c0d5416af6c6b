package k8sstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/snowfence/snowfence/lease"
)

// RaiseMarks implements lease.Admin: it raises the mark of every number in
// r to at least markMs and fences every holder in r, with one conditional
// write per number, each decided on the object as read (one list of the
// range first, a quorum read of the object after a refused write):
//
//   - a number without an object gets one (a Create) holding a free record
//     with the mark, under a claim nonce of its own;
//   - a held number (its lease expired or not) loses its holder, gets one
//     more epoch, a new claim nonce and the mark max(its mark, markMs), and
//     its journal entry ends (raised, at the mark it held), in the same
//     JSON patch: the holder's next Extend gets lease.ErrLost, and it
//     issues nothing past the mark it held;
//   - a free or quarantined number whose mark is below markMs gets markMs,
//     one more epoch and a new claim nonce too; a quarantined one stays
//     quarantined, and Unquarantine gives the raised mark back.
//
// Every write of it thus writes a record string no write planned before
// it expects (a fresh nonce), so a renewal or release planned on the
// holder's record — sent late, or after an etcd restore that repeats the
// resourceVersion — fails its record test (fence_k8srecord.go). No mark
// is ever lowered. It returns how many numbers it changed (a mark raised
// or a holder fenced), and stops at the first error: run it again, it is
// idempotent.
func (s *Store) RaiseMarks(ctx context.Context, r lease.Range, markMs int64) (int, error) {
	if err := s.open(); err != nil {
		return 0, err
	}
	if err := lease.CheckRange(r, lease.Unlimited); err != nil {
		return 0, err
	}
	sp := s.beforeRange(r.Lo, r.Hi)
	os, err := s.list(ctx, r)
	if err != nil {
		return 0, fmt.Errorf("k8sstore: raise marks of %s region %d: %w; retry", r, s.region, err)
	}
	_ = s.sawList(sp, os) // a sign is noticed and logged; the raise goes on
	changed := 0
	for n := r.Lo; n <= r.Hi; n++ {
		c, err := s.raiseMark(ctx, n, os[n], markMs)
		if err != nil {
			return changed, fmt.Errorf("k8sstore: raise marks of %s region %d to %s: machine %d: %w; %d changed so far; run it again (it is idempotent)",
				r, s.region, lease.FormatMs(markMs), n, err, changed)
		}
		if c {
			changed++
		}
	}
	s.log.Warn("raised marks and fenced every holder", "range", r.String(), "region", s.region, "mark", lease.FormatMs(markMs), "changed", changed)
	return changed, nil
}

// raiseMark is RaiseMarks on number n, whose object the list read as o:
// whether it changed the number.
func (s *Store) raiseMark(ctx context.Context, n int, o object, markMs int64) (bool, error) {
	sp := s.before(n)
	for i := range maxConflicts {
		if i > 0 {
			var err error
			if o, err = s.get(ctx, n); err != nil {
				return false, err
			}
			_ = s.saw(sp, n, o)
		}
		old := o.rec
		now := s.nowMs()
		var rec record
		var extra []patchOp
		switch {
		case !o.exists:
			rec = record{MarkMs: markMs, Claim: lease.NewNonce()}
		case old.held():
			rec = record{Epoch: old.Epoch + 1, MarkMs: max(old.MarkMs, markMs), Claim: lease.NewNonce(), FloorMs: old.FloorMs}
			extra = s.endOps(n, o, lease.EndRaised, old.MarkMs, now)
		case old.MarkMs >= markMs:
			return false, nil // free or quarantined, its mark already as high
		default:
			rec = old
			rec.Epoch, rec.MarkMs, rec.Claim, rec.Release = old.Epoch+1, markMs, lease.NewNonce(), ""
		}
		got, err := s.adminWrite(ctx, n, o, rec, now, extra)
		switch {
		case err == nil:
			s.sawWritten(sp, n, got)
			return true, nil
		case errors.Is(err, ErrForbidden), errors.Is(err, ErrNoNamespace):
			return false, err
		case definite(err):
			continue // changed since the read (or made meanwhile): read again
		}
		now2, rerr := s.reread(ctx, n)
		if rerr == nil && now2.exists && now2.rec.Claim == rec.Claim {
			return true, nil // the record shows this write
		}
		return false, fmt.Errorf("%w (re-read: %v); the outcome is unknown", err, rerr)
	}
	return false, fmt.Errorf("its object changed under %d reads in a row", maxConflicts)
}
