package etcdstore

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// Release gives l's number up: in one transaction, compared on l's token
// and etcd lease and on the mark being unchanged since this store last
// wrote or read it, it records markMs as the mark, deletes the owner key
// and ends l's journal entry as released at the mark recorded (over a
// quarantine's ending: the release knows the exact end); then it revokes
// the etcd lease. markMs may be below this holder's own reservation, but the
// mark recorded is never below one written by anyone else (an earlier
// holder, RaiseMarks): if the mark changed under it, it retries once with
// the higher of the two — unless the mark was written under l's token with
// a renewal value this store did not write (lease.Renewals): another copy
// of l's holder renewed it, and the release is refused with lease.ErrLost,
// leaving the mark and the etcd lease alone.
//
// Errors: lease.ErrLost if l no longer holds the number, lease.ErrRestored
// if etcd went back in time since l was claimed (noticed here as Extend
// notices it). After any
// other error the release may or may not have committed; the number frees
// itself when its etcd lease expires.
func (s *Store) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	err := s.release(ctx, l, markMs)
	if err != nil && l != nil {
		s.log.Warn("release failed", "machine", l.Machine, "region", s.region, "holder", l.Holder, "token", l.Token,
			"mark", lease.FormatMs(markMs), "error", err)
	}
	return err
}

func (s *Store) release(ctx context.Context, l *lease.Lease, markMs int64) error {
	h, err := s.heldFor(ctx, l)
	if err != nil {
		return err
	}
	if err := s.fenced(ctx, h, l); err != nil {
		return err
	}
	n := l.Machine
	owner, markKey := s.keys.owner(n), s.keys.mark(n)
	s.mu.Lock()
	value, id := max(markMs, h.floorMs), h.etcdLease
	s.mu.Unlock()
	for attempt := 0; ; attempt++ {
		s.mu.Lock()
		was := h.claimed()
		s.mu.Unlock()
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(owner), "=", int64(l.Token)),
			clientv3.Compare(clientv3.ModRevision(markKey), "=", was.markRev),
		}
		cmps = withOwnerLease(cmps, owner, was.etcdLease)
		resp, err := s.txn(ctx, cmps,
			[]clientv3.Op{
				clientv3.OpPut(markKey, encode(markValue{MarkMs: value, Token: l.Token, Holder: l.Holder})),
				clientv3.OpDelete(owner),
				s.releaseEndOp(n, claimID(was.etcdLease), int64(l.Token), value),
			},
			[]clientv3.Op{clientv3.OpGet(owner), clientv3.OpGet(markKey)})
		if err != nil {
			return fmt.Errorf("etcdstore: release machine %d token %d: %w; it may have committed, and otherwise the number "+
				"frees itself when its etcd lease expires", n, l.Token, err)
		}
		if err := s.fenced(ctx, h, l); err != nil {
			return err
		}
		if resp.Succeeded {
			// The mark just written is known, like every mark a lease
			// sets: after a restore that takes it away, this store's next
			// claims must notice (the lease is forgotten below).
			s.mu.Lock()
			s.setMarkRevLocked(h, n, resp.Header.Revision)
			s.mu.Unlock()
			break
		}
		o, m := kvAt(resp, 0), kvAt(resp, 1)
		if what := s.wentBack(l, was, o, m); what != "" {
			s.noticeRestore(h.epoch, what, resp.Header)
			return s.fenced(ctx, h, l)
		}
		if err := s.ownership(l, o, nil, m); err != nil {
			s.forget(l)
			s.revoke(ctx, id, n)
			return err
		}
		mv, err := parseMark(m)
		if err != nil {
			return err
		}
		if mv.Token == l.Token {
			// Written under l's claim by another copy of l (a clone)
			// unless by one of this store's own extensions: lowering it
			// could go below what that copy issued. The etcd lease is the
			// other copy's too: it is not revoked.
			if err := s.renewals.Check(l, mv.Renewal); err != nil {
				if errors.Is(err, lease.ErrLost) {
					s.forget(l) // a lease fenced by a restore is kept (forget)
				}
				return err
			}
		}
		s.mu.Lock()
		s.setMarkRevLocked(h, n, modRev(m))
		h.markMs = max(h.markMs, mv.MarkMs)
		if mv.Token != l.Token {
			h.floorMs = max(h.floorMs, mv.MarkMs)
		}
		value = max(markMs, h.floorMs)
		s.mu.Unlock()
		if attempt > 0 {
			return fmt.Errorf("etcdstore: release machine %d token %d: its mark keeps changing under it; retry", n, l.Token)
		}
	}
	s.forget(l)
	s.revoke(ctx, id, n)
	s.log.Info("released machine number", "machine", n, "region", s.region, "holder", l.Holder, "token", l.Token, "mark", lease.FormatMs(value))
	return nil
}
