package zkstore

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/lease"
)

// Quarantine implements lease.Admin: it makes number machine unclaimable
// and unrenewable as the operator's quarantine of a lease-table row does —
// holder lease.QuarantineHolder, one more epoch — keeping the mark it had
// as the quarantined record's mark, for Unquarantine. It writes a new
// claim nonce, in one multi-op: the lease znode set on the version read
// after a sync (or created, for a number without one), the old claim's
// child deleted and the new one's created (so no write planned on the
// holder's claim can land after it), and, for a held number, the holder's
// journal entry ended (quarantined, at its mark). The holder's next
// renewal fails with lease.ErrQuarantined and it stops at its mark.
// Quarantining a quarantined number does nothing. After an error of
// unknown outcome it re-reads the znode, and the quarantine took effect if
// it carries its nonce.
func (s *Store) Quarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return err
	}
	if err := s.ensureParents(ctx); err != nil {
		return err
	}
	sp := s.before(machine)
	goneAt := int32(-1) // the version at which the claim's child was found gone
	for range maxConflicts {
		z, used, err := s.adminRead(ctx, machine)
		if err != nil {
			return fmt.Errorf("zkstore: quarantine machine %d region %d: %w; retry", machine, s.region, err)
		}
		_ = s.saw(sp, machine, z) // a sign is noticed and logged; the quarantine goes on
		if z.exists && z.rec.quarantined() {
			s.log.Info("machine number already quarantined", "machine", machine, "region", s.region)
			return nil
		}
		if z.exists && z.stat.version == goneAt {
			return s.adminChildGone(machine, z)
		}
		old := z.rec
		rec := record{Holder: lease.QuarantineHolder, Epoch: old.Epoch + 1, MarkMs: old.MarkMs, Claim: lease.NewNonce(), FloorMs: old.FloorMs}
		ops := s.newClaimOps(machine, z, rec, used)
		if old.held() {
			ends, err := s.endOps(ctx, machine, old, lease.EndQuarantined, old.MarkMs)
			if err != nil {
				return fmt.Errorf("zkstore: quarantine machine %d region %d: %w", machine, s.region, err)
			}
			ops = append(ops, ends...)
		}
		res, err := call(ctx, func() ([]zk.MultiResponse, error) { return s.c.Multi(ops...) })
		switch {
		case err == nil:
			s.saw(sp, machine, s.written(machine, rec, ops, res))
			s.log.Warn("quarantined machine number: it can be neither claimed nor renewed", "machine", machine, "region", s.region,
				"epoch", rec.Epoch, "mark", lease.FormatMs(rec.MarkMs), "holder_was", old.Holder)
			return nil
		case definite(err):
			if childFailed(ops, res) {
				goneAt = z.stat.version
			}
			continue // changed since the read: read again
		}
		z, rerr := s.reread(ctx, machine)
		if rerr == nil && z.exists && z.rec.Claim == rec.Claim {
			return nil
		}
		return fmt.Errorf("zkstore: quarantine machine %d region %d: %w (re-read: %v); the outcome is unknown: run it again (it is idempotent)",
			machine, s.region, err, rerr)
	}
	return fmt.Errorf("zkstore: quarantine machine %d region %d: its znode changed under %d reads in a row; run it again", machine, s.region, maxConflicts)
}

// Unquarantine implements lease.Admin: it makes a quarantined number
// claimable again — holder removed, the epoch and claim nonce kept — with
// the mark the quarantine kept (raised since by RaiseMarks, if it was), so
// the next holder starts above everything the holder before could have
// issued. The write is one multi-op: a check that the quarantine's claim
// child exists and a Set of the lease znode on the version read after a
// sync. lease.ErrNotHeld if the number is not quarantined.
func (s *Store) Unquarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return err
	}
	sp := s.before(machine)
	goneAt := int32(-1) // the version at which the claim's child was found gone
	for range maxConflicts {
		z, err := s.read(ctx, machine)
		if err != nil {
			return fmt.Errorf("zkstore: unquarantine machine %d region %d: %w; retry", machine, s.region, err)
		}
		_ = s.saw(sp, machine, z)
		if !z.exists || !z.rec.quarantined() {
			return fmt.Errorf("%w: machine %d region %d is not quarantined, so there is nothing to undo", lease.ErrNotHeld, machine, s.region)
		}
		if z.stat.version == goneAt {
			return s.adminChildGone(machine, z)
		}
		rec := z.rec
		rec.Holder = ""
		ops := s.sameClaimOps(machine, z, rec)
		res, err := call(ctx, func() ([]zk.MultiResponse, error) { return s.c.Multi(ops...) })
		switch {
		case err == nil:
			s.saw(sp, machine, s.written(machine, rec, ops, res))
			s.log.Warn("unquarantined machine number: it can be claimed again", "machine", machine, "region", s.region,
				"epoch", rec.Epoch, "mark", lease.FormatMs(rec.MarkMs))
			return nil
		case definite(err):
			if childFailed(ops, res) {
				goneAt = z.stat.version
			}
			continue
		}
		now, rerr := s.reread(ctx, machine)
		if rerr == nil && now.exists && !now.rec.quarantined() && now.rec.Epoch == rec.Epoch && now.rec.Claim == rec.Claim {
			return nil // free under the quarantine's own nonce: this write committed
		}
		return fmt.Errorf("zkstore: unquarantine machine %d region %d: %w (re-read: %v); the outcome is unknown: check with Get, and retry",
			machine, s.region, err, rerr)
	}
	return fmt.Errorf("zkstore: unquarantine machine %d region %d: its znode changed under %d reads in a row; retry", machine, s.region, maxConflicts)
}
