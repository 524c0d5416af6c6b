package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// extendTries bounds Extend's attempts when only the mark or the bytes of
// the fleet schedule key changed under it.
const extendTries = 3

// Extend raises the mark of l's number to markMs — never lower than the mark
// this store last wrote or saw for it — with a transaction that succeeds
// only if the owner key still has l's token as its create revision and is
// bound to l's etcd lease, the number is not quarantined, the mark key is
// unchanged since this store last wrote or read it, and the fleet schedule
// is still the one l was claimed with. The mark key names l's token and
// holder and a fresh renewal value (lease.Renewals), returned in the
// lease's Renewal. Only after it returns may timestamps below the returned
// lease's MarkMs be issued.
//
// When the compare fails it reads the keys and decides, in this order:
// etcd went back in time (see wentBack: the owner key with l's token bound
// to another etcd lease, the mark key gone or at a lower mod revision, the
// mark below this store's) — a restore, lease.ErrRestored; the owner key
// gone or another's — lease.ErrLost; quarantined — lease.ErrQuarantined;
// the fleet schedule differs from l.Schedule — lease.ErrSchedule; the mark
// written under l's token with a renewal value this store neither wrote nor
// sent for l (lease.Renewals: a second process renews the same claim) —
// lease.ErrLost. If only the mark changed otherwise (written by another
// claim, or by l's own extension whose reply was lost) or the schedule key
// was rewritten with the same schedule, it retries with what it read. Then
// it refreshes the etcd lease with one keep-alive; that is for liveness
// only — safety rests on the compare. leaseFor is not used: the etcd lease keeps the TTL it was
// granted with at the claim.
//
// After any error but the typed ones the write may or may not have
// committed.
func (s *Store) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	h, err := s.heldFor(ctx, l)
	if err != nil {
		return nil, s.renewFailed(l, markMs, err)
	}
	if err := s.fenced(ctx, h, l); err != nil {
		return nil, s.renewFailed(l, markMs, err)
	}
	n := l.Machine
	owner, quar, markKey := s.keys.owner(n), s.keys.quarantine(n), s.keys.mark(n)
	s.mu.Lock()
	target := max(markMs, l.MarkMs, h.markMs)
	s.mu.Unlock()
	renewal := s.renewals.Next(l)
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		was, sched := h.claimed(), h.sched
		s.mu.Unlock()
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(owner), "=", int64(l.Token)),
			clientv3.Compare(clientv3.CreateRevision(quar), "=", 0),
			clientv3.Compare(clientv3.ModRevision(markKey), "=", was.markRev),
		}
		cmps = withOwnerLease(cmps, owner, was.etcdLease)
		cmps, err := withExtensionSchedule(cmps, sched, l.Schedule, target, s.keys.schedule)
		if err != nil {
			return nil, s.renewFailed(l, target, fmt.Errorf("machine %d region %d token %d: %w; stop issuing on it", n, s.region, l.Token, err))
		}
		resp, err := s.txn(ctx, cmps,
			[]clientv3.Op{clientv3.OpPut(markKey, encode(markValue{MarkMs: target, Token: l.Token, Holder: l.Holder, Renewal: renewal}))},
			[]clientv3.Op{clientv3.OpGet(owner), clientv3.OpGet(quar), clientv3.OpGet(markKey), clientv3.OpGet(s.keys.schedule)})
		if err != nil {
			return nil, s.renewFailed(l, target, fmt.Errorf("etcdstore: extend machine %d token %d to %s: %w; the write may have committed: "+
				"re-read with Get before deciding, and issue nothing past the previous mark meanwhile", n, l.Token, lease.FormatMs(target), err))
		}
		if err := s.fenced(ctx, h, l); err != nil {
			return nil, s.renewFailed(l, target, err)
		}
		if resp.Succeeded {
			s.mu.Lock()
			s.setMarkRevLocked(h, n, resp.Header.Revision)
			h.markMs = max(h.markMs, target)
			s.mu.Unlock()
			s.renewals.Acked(l, renewal)
			break
		}
		o, q, m, sk := kvAt(resp, 0), kvAt(resp, 1), kvAt(resp, 2), kvAt(resp, 3)
		if what := s.wentBack(l, was, o, m); what != "" {
			s.noticeRestore(h.epoch, what, resp.Header)
			return nil, s.renewFailed(l, target, s.fenced(ctx, h, l))
		}
		if err := s.ownership(l, o, q, m); err != nil {
			if !errors.Is(err, lease.ErrQuarantined) {
				s.forget(l)
			}
			return nil, s.renewFailed(l, target, err)
		}
		if scheduleMoved(sched, sk) {
			if err := checkExtensionKV(l.Schedule, sk, target); err != nil {
				return nil, s.renewFailed(l, target, fmt.Errorf("machine %d region %d token %d: %w; stop issuing on it", n, s.region, l.Token, err))
			}
			s.mu.Lock()
			h.sched = guardOf(sk) // the same schedule, or one that agrees until the mark
			s.mu.Unlock()
		}
		mv, err := parseMark(m)
		if err != nil {
			return nil, s.renewFailed(l, target, err)
		}
		if mv.Token == l.Token {
			// Written under l's claim since this store last wrote or read
			// it: by an extension of l whose reply was lost, or by another
			// copy of l (a clone), which must not extend from it.
			if err := s.renewals.Check(l, mv.Renewal); err != nil {
				if errors.Is(err, lease.ErrLost) {
					s.forget(l) // a lease fenced by a restore is kept (forget)
				}
				return nil, s.renewFailed(l, target, err)
			}
		}
		s.mu.Lock()
		s.setMarkRevLocked(h, n, modRev(m))
		h.markMs = max(h.markMs, mv.MarkMs)
		if mv.Token != l.Token {
			h.floorMs = max(h.floorMs, mv.MarkMs)
		}
		s.mu.Unlock()
		if attempt+1 >= extendTries {
			return nil, s.renewFailed(l, target, fmt.Errorf("etcdstore: extend machine %d token %d: its mark or the fleet schedule key keeps changing under it "+
				"(mark now %s, written by %q token %d); retry", n, l.Token, lease.FormatMs(mv.MarkMs), mv.Holder, mv.Token))
		}
		if modRev(m) != was.markRev {
			s.log.Info("mark was raised by someone else; extending from it", "machine", n, "region", s.region, "holder", l.Holder,
				"token", l.Token, "mark", lease.FormatMs(mv.MarkMs), "by", mv.Holder)
		}
		target = max(target, mv.MarkMs)
	}
	s.mu.Lock()
	id := h.etcdLease
	s.mu.Unlock()
	if _, err := s.cli.KeepAliveOnce(ctx, id); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			s.forget(l)
			return nil, s.renewFailed(l, target, fmt.Errorf("%w: machine %d region %d token %d: its etcd lease %x expired or was revoked; "+
				"stop issuing on it and claim again", lease.ErrLost, n, s.region, l.Token, int64(id)))
		}
		return nil, s.renewFailed(l, target, fmt.Errorf("etcdstore: machine %d token %d: the mark was extended to %s, but the keep-alive "+
			"of its etcd lease %x failed: %w; retry before the lease's TTL runs out", n, l.Token, lease.FormatMs(target), int64(id), err))
	}
	nl := *l
	nl.MarkMs, nl.Renewal = target, renewal
	return &nl, nil
}

// renewFailed logs a failed renewal and returns err.
func (s *Store) renewFailed(l *lease.Lease, markMs int64, err error) error {
	if l != nil {
		s.log.Warn("renewal failed", "machine", l.Machine, "region", s.region, "holder", l.Holder, "token", l.Token,
			"mark", lease.FormatMs(l.MarkMs), "wanted", lease.FormatMs(markMs), "error", err)
	}
	return err
}
