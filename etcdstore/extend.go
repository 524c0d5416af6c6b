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

// Extend raises the mark of l's number to markMs — never lower than the mark
// this store last wrote or saw for it — with a transaction that succeeds
// only if the owner key still has l's token as its create revision, the
// number is not quarantined, and the mark key is unchanged since this store
// last wrote or read it. Only after it returns may timestamps below the
// returned lease's MarkMs be issued.
//
// If only the mark changed (an operator raised it with RaiseMarks) it
// retries once with the higher of the two. Then it refreshes the etcd lease
// with one keep-alive; that is for liveness only — safety rests on the
// compare. leaseFor is not used: the etcd lease keeps the TTL it was
// granted with at the claim.
//
// Errors: lease.ErrLost (the owner key is gone or has another token, or
// the etcd lease is gone), lease.ErrQuarantined, lease.ErrRestored (etcd
// was restored from an earlier state since l was claimed). After any other
// error the write may or may not have committed.
func (s *Store) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	h, err := s.heldFor(ctx, l)
	if err != nil {
		return nil, s.renewFailed(l, markMs, err)
	}
	if err := s.restoredErr(h.epoch, l); err != nil {
		return nil, s.renewFailed(l, markMs, err)
	}
	n := l.Machine
	owner, quar, markKey := s.keys.owner(n), s.keys.quarantine(n), s.keys.mark(n)
	s.mu.Lock()
	target, markRev := max(markMs, l.MarkMs, h.markMs), h.markRev
	s.mu.Unlock()
	for attempt := 0; ; attempt++ {
		resp, err := s.txn(ctx,
			[]clientv3.Cmp{
				clientv3.Compare(clientv3.CreateRevision(owner), "=", int64(l.Token)),
				clientv3.Compare(clientv3.CreateRevision(quar), "=", 0),
				clientv3.Compare(clientv3.ModRevision(markKey), "=", markRev),
			},
			[]clientv3.Op{clientv3.OpPut(markKey, encode(markValue{MarkMs: target, Token: l.Token, Holder: l.Holder}))},
			[]clientv3.Op{clientv3.OpGet(owner), clientv3.OpGet(quar), clientv3.OpGet(markKey)})
		if err != nil {
			return nil, s.renewFailed(l, target, fmt.Errorf("etcdstore: extend machine %d token %d to %s: %w; the write may have committed: "+
				"re-read with Get before deciding, and issue nothing past the previous mark meanwhile", n, l.Token, msTime(target), err))
		}
		if err := s.restoredErr(h.epoch, l); err != nil {
			return nil, s.renewFailed(l, target, err)
		}
		if resp.Succeeded {
			s.mu.Lock()
			h.markRev, h.markMs = resp.Header.Revision, max(h.markMs, target)
			s.mu.Unlock()
			break
		}
		o, q, m := kvAt(resp, 0), kvAt(resp, 1), kvAt(resp, 2)
		if err := s.ownership(l, o, q); err != nil {
			if !errors.Is(err, lease.ErrQuarantined) {
				s.forget(l)
			}
			return nil, s.renewFailed(l, target, err)
		}
		mv, err := parseMark(m)
		if err != nil {
			return nil, s.renewFailed(l, target, err)
		}
		s.mu.Lock()
		h.markRev, markRev = modRev(m), modRev(m)
		h.markMs = max(h.markMs, mv.MarkMs)
		if mv.Token != l.Token {
			h.floorMs = max(h.floorMs, mv.MarkMs)
		}
		s.mu.Unlock()
		if attempt > 0 {
			return nil, s.renewFailed(l, target, fmt.Errorf("etcdstore: extend machine %d token %d: its mark keeps changing under it "+
				"(now %s, written by %q token %d); retry", n, l.Token, msTime(mv.MarkMs), mv.Holder, mv.Token))
		}
		s.log.Info("mark was raised by someone else; extending from it", "machine", n, "region", s.region, "holder", l.Holder,
			"token", l.Token, "mark", msTime(mv.MarkMs), "by", mv.Holder)
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
			"of its etcd lease %x failed: %w; retry before the lease's TTL runs out", n, l.Token, msTime(target), int64(id), err))
	}
	nl := *l
	nl.MarkMs = target
	return &nl, nil
}

// renewFailed logs a failed renewal and returns err.
func (s *Store) renewFailed(l *lease.Lease, markMs int64, err error) error {
	if l != nil {
		s.log.Warn("renewal failed", "machine", l.Machine, "region", s.region, "holder", l.Holder, "token", l.Token,
			"mark", msTime(l.MarkMs), "wanted", msTime(markMs), "error", err)
	}
	return err
}
