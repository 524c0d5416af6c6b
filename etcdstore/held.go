package etcdstore

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// leaseKey identifies a claim: the token alone could repeat across a
// restore, with another number.
type leaseKey struct {
	machine int
	token   uint64
}

// held is what the store remembers of a lease it claimed (or was handed):
// enough to compare on the mark without re-reading it first. Fields are
// guarded by Store.mu.
type held struct {
	// etcdLease is the etcd lease the owner key is bound to.
	etcdLease clientv3.LeaseID
	// epoch is the restore epoch the lease was claimed in.
	epoch uint64
	// markRev is the mod revision of the mark key as this store last wrote
	// or read it; Extend and Release compare on it, so they never overwrite
	// a mark someone else raised.
	markRev int64
	// markMs is the mark as this store last wrote or read it; Extend never
	// writes less.
	markMs int64
	// floorMs is the highest mark written by anyone else (an earlier holder,
	// RaiseMarks); Release never records less.
	floorMs int64
	// sched guards Extend against a change of the fleet schedule since the
	// lease's schedule was last found equal to it.
	sched scheduleGuard
	// repaired: after a restore, the mark was written back once (fenced).
	repaired bool
}

// setMarkRevLocked records that the mark key of h's number n is at mod
// revision rev, in h and among the marks known to every Store value sharing
// this history (knownMarks), so that a claim in any keyspace compares it —
// the numbers a keeper holds for another layout are another keyspace's.
// Called with Store.mu held.
func (s *Store) setMarkRevLocked(h *held, n int, rev int64) {
	h.markRev = rev
	s.knewMarkLocked(h.epoch, s.keys.base, n, rev)
}

// claimed returns what the store knew of the lease before a request.
// Called with Store.mu held.
func (h *held) claimed() claimed {
	return claimed{etcdLease: h.etcdLease, markRev: h.markRev, markMs: h.markMs}
}

// heldFor returns the state of lease l, reading it from the store when this
// store did not claim it (a lease handed over from another Store value).
func (s *Store) heldFor(ctx context.Context, l *lease.Lease) (*held, error) {
	if l == nil {
		return nil, fmt.Errorf("%w: nil lease", lease.ErrInvalid)
	}
	if l.Region != s.region {
		return nil, fmt.Errorf("%w: lease of region %d given to the store of region %d", lease.ErrInvalid, l.Region, s.region)
	}
	if err := s.open(); err != nil {
		return nil, err
	}
	k := leaseKey{l.Machine, l.Token}
	s.mu.Lock()
	h := s.leases[k]
	epoch := s.hist.epoch
	s.mu.Unlock()
	if h != nil {
		return h, s.sameClaim(l, h)
	}
	n := l.Machine
	// Quarantine is left to the caller's own compare: a quarantined holder
	// may still release.
	resp, err := s.txn(ctx, nil, []clientv3.Op{
		clientv3.OpGet(s.keys.owner(n)), clientv3.OpGet(s.keys.mark(n)), clientv3.OpGet(s.keys.schedule),
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: read machine %d: %w", n, err)
	}
	o, m, sk := kvAt(resp, 0), kvAt(resp, 1), kvAt(resp, 2)
	if err := s.ownership(l, o, nil, m); err != nil {
		return nil, err
	}
	mv, err := parseMark(m)
	if err != nil {
		return nil, err
	}
	if mv.Token == l.Token {
		// The mark was written under l's claim: by l's last extension,
		// whose value l carries, or by another copy of l (a clone).
		if err := s.renewals.Check(l, mv.Renewal); err != nil {
			return nil, err
		}
	}
	h = &held{etcdLease: clientv3.LeaseID(o.Lease), epoch: epoch, markRev: modRev(m), markMs: max(mv.MarkMs, l.MarkMs), sched: guardOf(sk)}
	if mv.Token != l.Token {
		h.floorMs = mv.MarkMs
	}
	s.mu.Lock()
	if prev := s.leases[k]; prev != nil {
		h = prev
	} else {
		s.leases[k] = h
		s.setMarkRevLocked(h, l.Machine, h.markRev)
	}
	s.mu.Unlock()
	return h, s.sameClaim(l, h)
}

// ownership checks the owner and quarantine keys read for lease l:
// lease.ErrQuarantined, lease.ErrLost, or nil if l still owns its number.
// m is the mark key read with them (nil: absent or not read): an owner key
// gone with a mark RaiseMarks wrote after l's claim (raisedSince) names
// the operator's raise-marks as what fenced l.
func (s *Store) ownership(l *lease.Lease, o, q, m *mvccpb.KeyValue) error {
	if q != nil {
		return fmt.Errorf("%w: machine %d region %d was quarantined by an operator; token %d may issue nothing past its mark %s "+
			"(unquarantine it to make it claimable again)", lease.ErrQuarantined, l.Machine, l.Region, l.Token, lease.FormatMs(l.MarkMs))
	}
	switch {
	case o == nil && raisedSince(m, l.Token):
		mv, _ := parseMark(m)
		return fmt.Errorf("%w: machine %d region %d: token %d was fenced by an operator's leases raise-marks (its owner key deleted, "+
			"the mark raised to %s: the step after a restore of the store); stop issuing on it and claim again above the raised mark",
			lease.ErrLost, l.Machine, l.Region, l.Token, lease.FormatMs(mv.MarkMs))
	case o == nil:
		return fmt.Errorf("%w: machine %d region %d: the owner key of token %d is gone (its etcd lease expired or was revoked, "+
			"or the number was released); stop issuing on it and claim again", lease.ErrLost, l.Machine, l.Region, l.Token)
	case uint64(o.CreateRevision) != l.Token:
		ov, _ := parseOwner(o)
		return fmt.Errorf("%w: machine %d region %d is now held by %q with token %d, not token %d; stop issuing on it and claim again",
			lease.ErrLost, l.Machine, l.Region, ov.Holder, o.CreateRevision, l.Token)
	}
	return nil
}

// raisedSince reports whether mark key m was written by RaiseMarks after
// the claim of token (the owner key's create revision): RaiseMarks deletes
// the owner key and writes the mark in one transaction (raiseMark).
func raisedSince(m *mvccpb.KeyValue, token uint64) bool {
	if m == nil || m.ModRevision <= int64(token) {
		return false
	}
	mv, err := parseMark(m)
	return err == nil && mv.Holder == raiseMarksHolder
}

// forget drops the state of a lease that is gone; its mark's revision stays
// among the marks known (setMarkRevLocked). Leases fenced by a restore
// are kept: forgotten, a later call would read the restored store afresh
// and could find the lease's owner key there, unfenced.
func (s *Store) forget(l *lease.Lease) {
	s.mu.Lock()
	delete(s.leases, leaseKey{l.Machine, l.Token})
	s.mu.Unlock()
	s.renewals.Forget(l)
}
