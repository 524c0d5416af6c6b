package k8sstore

import (
	"context"
	"errors"
	"fmt"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/snowfence/snowfence/lease"
)

// Quarantine implements lease.Admin: it makes number machine unclaimable
// and unrenewable as the operator's quarantine of a lease-table row does —
// holder lease.QuarantineHolder, one more epoch — keeping the mark it had
// as the quarantined record's mark, for Unquarantine. It writes a new
// claim nonce, so the record string changes in a way no write planned
// before it expects: a renewal or release planned on the holder's record,
// even one sent late, fails its record test (fence_k8srecord.go). One
// write: a JSON patch testing the resourceVersion and the record read
// (a Create, for a number without an object), which for a held number
// also ends the holder's journal entry (quarantined, at its mark). The
// holder's next renewal fails with lease.ErrQuarantined and it stops at
// its mark. Quarantining a quarantined number does nothing. After an error
// of unknown outcome it re-reads the object, and the quarantine took
// effect if it carries its nonce.
func (s *Store) Quarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return err
	}
	sp := s.before(machine)
	for range maxConflicts {
		o, err := s.get(ctx, machine)
		if err != nil {
			return fmt.Errorf("k8sstore: quarantine machine %d region %d: %w", machine, s.region, err)
		}
		_ = s.saw(sp, machine, o) // a sign is noticed and logged; the quarantine goes on
		if o.exists && o.rec.quarantined() {
			s.log.Info("machine number already quarantined", "machine", machine, "region", s.region)
			return nil
		}
		old := o.rec
		rec := record{Holder: lease.QuarantineHolder, Epoch: old.Epoch + 1, MarkMs: old.MarkMs, Claim: lease.NewNonce(), FloorMs: old.FloorMs}
		now := s.nowMs()
		var ops []patchOp
		if old.held() {
			ops = s.endOps(machine, o, lease.EndQuarantined, old.MarkMs, now)
		}
		got, err := s.adminWrite(ctx, machine, o, rec, now, ops)
		switch {
		case err == nil:
			s.sawWritten(sp, machine, got)
			s.log.Warn("quarantined machine number: it can be neither claimed nor renewed", "machine", machine, "region", s.region,
				"epoch", rec.Epoch, "mark", lease.FormatMs(rec.MarkMs), "holder_was", old.Holder)
			return nil
		case errors.Is(err, ErrForbidden), errors.Is(err, ErrNoNamespace):
			return fmt.Errorf("k8sstore: quarantine machine %d region %d: %w", machine, s.region, err)
		case definite(err):
			continue // changed since the read: read again
		}
		now2, rerr := s.reread(ctx, machine)
		if rerr == nil && now2.exists && now2.rec.Claim == rec.Claim {
			return nil
		}
		return fmt.Errorf("k8sstore: quarantine machine %d region %d: %w (re-read: %v); the outcome is unknown: run it again (it is idempotent)",
			machine, s.region, err, rerr)
	}
	return fmt.Errorf("k8sstore: quarantine machine %d region %d: its object changed under %d reads in a row; run it again", machine, s.region, maxConflicts)
}

// Unquarantine implements lease.Admin: it makes a quarantined number
// claimable again — holder removed, the epoch and claim nonce kept — with
// the mark the quarantine kept (raised since by RaiseMarks, if it was), so
// the next holder starts above everything the holder before could have
// issued. One JSON patch testing the resourceVersion and the record read.
// lease.ErrNotHeld if the number is not quarantined.
func (s *Store) Unquarantine(ctx context.Context, machine int) error {
	if err := s.open(); err != nil {
		return err
	}
	if err := lease.CheckMachine(machine, lease.Unlimited); err != nil {
		return err
	}
	sp := s.before(machine)
	for range maxConflicts {
		o, err := s.get(ctx, machine)
		if err != nil {
			return fmt.Errorf("k8sstore: unquarantine machine %d region %d: %w", machine, s.region, err)
		}
		_ = s.saw(sp, machine, o)
		if !o.exists || !o.rec.quarantined() {
			return fmt.Errorf("%w: machine %d region %d is not quarantined, so there is nothing to undo", lease.ErrNotHeld, machine, s.region)
		}
		rec := o.rec
		rec.Holder = ""
		got, err := s.adminWrite(ctx, machine, o, rec, s.nowMs(), nil)
		switch {
		case err == nil:
			s.sawWritten(sp, machine, got)
			s.log.Warn("unquarantined machine number: it can be claimed again", "machine", machine, "region", s.region,
				"epoch", rec.Epoch, "mark", lease.FormatMs(rec.MarkMs))
			return nil
		case errors.Is(err, ErrForbidden):
			return fmt.Errorf("k8sstore: unquarantine machine %d region %d: %w", machine, s.region, err)
		case definite(err):
			continue
		}
		now, rerr := s.reread(ctx, machine)
		if rerr == nil && now.exists && !now.rec.quarantined() && now.rec.Epoch == rec.Epoch && now.rec.Claim == rec.Claim {
			return nil // free under the quarantine's own nonce: this write committed
		}
		return fmt.Errorf("k8sstore: unquarantine machine %d region %d: %w (re-read: %v); the outcome is unknown: check with Get, and retry",
			machine, s.region, err, rerr)
	}
	return fmt.Errorf("k8sstore: unquarantine machine %d region %d: its object changed under %d reads in a row; retry", machine, s.region, maxConflicts)
}

// adminWrite is an operator's write of rec over number n's object as read,
// o: a Create for a number without an object, else one JSON patch testing
// the resourceVersion and the record read (fence_k8srecord.go), with extra
// (journal ends) after its replacements. nowMs fills in the spec.
func (s *Store) adminWrite(ctx context.Context, n int, o object, rec record, nowMs int64, extra []patchOp) (*coordv1.Lease, error) {
	if !o.exists {
		return s.create(ctx, n, rec, nowMs)
	}
	return s.patch(ctx, s.name(n), append(writeOps(o, rec, spec(rec, nowMs, 0)), extra...))
}

// sawWritten records the object a write of number n returned, as read
// after sp was taken.
func (s *Store) sawWritten(sp span, n int, l *coordv1.Lease) {
	if w, err := s.objectOf(l); err == nil {
		_ = s.saw(sp, n, w)
	}
}
