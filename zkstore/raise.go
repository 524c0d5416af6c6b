package zkstore

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/lease"
)

// RaiseMarks implements lease.Admin: it raises the mark of every number in
// r to at least markMs and fences every holder in r, with one conditional
// multi-op per number, each decided on the znode read after a sync:
//
//   - a number without a lease znode gets a free record with the mark,
//     under a claim nonce of its own;
//   - a held number (its lease expired or not) loses its holder, gets one
//     more epoch, a new claim nonce (the holder's claim child deleted, the
//     new one created, so no write planned on the holder's claim lands
//     after it) and the mark max(its mark, markMs), and its journal entry
//     ends (raised, at the mark it held): the holder's next Extend gets
//     lease.ErrLost, and it issues nothing past the mark it held;
//   - a free or quarantined number whose mark is below markMs gets markMs,
//     one more epoch and a new claim nonce too; a quarantined one stays
//     quarantined, and Unquarantine gives the raised mark back.
//
// Every write of it thus replaces the record's claim: a write planned on
// a claim lands only while that claim is the record's, and under an
// operator's nonce no two writes can differ (a restore that brings the
// version back brings the same content back), so a raise planned before a
// restore cannot land over a record it never read. No mark is ever
// lowered. It returns how many numbers it changed (a mark
// raised or a holder fenced), and stops at the first error: run it again,
// it is idempotent.
func (s *Store) RaiseMarks(ctx context.Context, r lease.Range, markMs int64) (int, error) {
	if err := s.open(); err != nil {
		return 0, err
	}
	if err := lease.CheckRange(r, lease.Unlimited); err != nil {
		return 0, err
	}
	if err := s.ensureParents(ctx); err != nil {
		return 0, err
	}
	changed := 0
	for n := r.Lo; n <= r.Hi; n++ {
		c, err := s.raiseMark(ctx, n, markMs)
		if err != nil {
			return changed, fmt.Errorf("zkstore: raise marks of %s region %d to %s: machine %d: %w; %d changed so far; run it again (it is idempotent)",
				r, s.region, lease.FormatMs(markMs), n, err, changed)
		}
		if c {
			changed++
		}
	}
	s.log.Warn("raised marks and fenced every holder", "range", r.String(), "region", s.region, "mark", lease.FormatMs(markMs), "changed", changed)
	return changed, nil
}

// raiseMark is RaiseMarks on number n: whether it changed the number.
func (s *Store) raiseMark(ctx context.Context, n int, markMs int64) (bool, error) {
	sp := s.before(n)
	goneAt := int32(-1) // the version at which the claim's child was found gone
	for range maxConflicts {
		z, used, err := s.adminRead(ctx, n)
		if err != nil {
			return false, err
		}
		_ = s.saw(sp, n, z) // a sign is noticed and logged; the raise goes on
		if z.exists && z.stat.version == goneAt {
			return false, s.adminChildGone(n, z)
		}
		old := z.rec
		var rec record
		var ops []any
		switch {
		case !z.exists:
			rec = record{MarkMs: markMs, Claim: lease.NewNonce()}
			ops = s.newClaimOps(n, z, rec, used)
		case old.held():
			rec = record{Epoch: old.Epoch + 1, MarkMs: max(old.MarkMs, markMs), Claim: lease.NewNonce(), FloorMs: old.FloorMs}
			ops = s.newClaimOps(n, z, rec, used)
			ends, err := s.endOps(ctx, n, old, lease.EndRaised, old.MarkMs)
			if err != nil {
				return false, err
			}
			ops = append(ops, ends...)
		case old.MarkMs >= markMs:
			return false, nil // free or quarantined, its mark already as high
		default:
			rec = old
			rec.Epoch, rec.MarkMs, rec.Claim = old.Epoch+1, markMs, lease.NewNonce()
			ops = s.newClaimOps(n, z, rec, used)
		}
		res, err := call(ctx, func() ([]zk.MultiResponse, error) { return s.c.Multi(ops...) })
		switch {
		case err == nil:
			s.saw(sp, n, s.written(n, rec, ops, res))
			return true, nil
		case definite(err):
			if childFailed(ops, res) {
				goneAt = z.stat.version
			}
			continue // changed since the read: read again
		}
		now, rerr := s.reread(ctx, n)
		if rerr == nil && now.exists && now.rec.Claim == rec.Claim {
			return true, nil // the record shows this write
		}
		return false, fmt.Errorf("%w (re-read: %v); the outcome is unknown", err, rerr)
	}
	return false, fmt.Errorf("its znode changed under %d reads in a row", maxConflicts)
}
