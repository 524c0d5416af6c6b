package etcdstore

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// raiseTries bounds the compare-and-swap attempts per number in RaiseMarks.
const raiseTries = 10

// RaiseMarks is the operator's step after etcd was restored from an old
// backup (docs/runbook.md): for every number in r — numbers never claimed
// included, since they may have been claimed in the history the restore
// lost — it fences the holder and raises the mark to at least markMs, so
// that every later claim starts at or above it.
//
// Per number it runs one transaction, compared on the mark key's mod
// revision and the owner key's create revision as just read, that deletes
// the owner key (whoever holds it), writes the raised mark if the stored
// one is lower, and ends in the journal the holding it stops (raiseMark).
// A holder whose claim survived in the restored store then fails its next
// Extend with lease.ErrLost and claims again, above the raised mark; a
// holder that extended meanwhile, or a claim made meanwhile, makes the
// compare fail, and the number is re-read and done again, so a higher mark
// is never overwritten with less. The mark written names token 0 and
// holder "raise-marks" — on a held number even when its mark was already
// higher (kept), so that the fenced holder's next renewal names the
// operator's action (raisedSince). A number with no owner key and a mark already at
// or above markMs is left alone.
//
// It returns how many numbers it changed (mark raised or holder fenced);
// on an error, those changed before it. Running it again is harmless.
func (s *Store) RaiseMarks(ctx context.Context, r lease.Range, markMs int64) (int, error) {
	if err := s.open(); err != nil {
		return 0, err
	}
	if err := lease.CheckRange(r, lease.Unlimited); err != nil {
		return 0, err
	}
	resp, err := s.get(ctx, s.keys.base, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("etcdstore: raise marks of %s: read them: %w", r, err)
	}
	marks := make(map[int]*mvccpb.KeyValue)
	owners := make(map[int]*mvccpb.KeyValue)
	for _, kv := range resp.Kvs {
		kind, n, ok := s.keys.parse(string(kv.Key))
		switch {
		case !ok:
		case kind == kindMark:
			marks[n] = kv
		case kind == kindOwner:
			owners[n] = kv
		}
	}
	changed, fenced := 0, 0
	for n := r.Lo; n <= r.Hi; n++ {
		raised, deleted, err := s.raiseMark(ctx, n, marks[n], owners[n], markMs)
		if err != nil {
			return changed, err
		}
		if raised || deleted {
			changed++
		}
		if deleted {
			fenced++
		}
	}
	s.log.Warn("raised marks and fenced every holder", "region", s.region, "range", r.String(), "mark", lease.FormatMs(markMs),
		"changed", changed, "holders_fenced", fenced)
	return changed, nil
}

// raiseMark fences number n's holder and raises its mark from cur (the
// key as last read, nil if absent) to markMs, re-reading on a conflict;
// owner is the owner key as read with cur. It reports whether it raised
// the mark and whether it deleted an owner key.
//
// The transaction is compared on the owner key too, and ends in the
// journal the holding it stops: the holder's entry, or, on a number no one
// holds, the newest entry if no write ended it (a holder whose lease ran
// out, or a claim never renewed), since the raised mark is not where that
// holder stopped. It ends it as raised at cur's mark, the one it replaces.
func (s *Store) raiseMark(ctx context.Context, n int, cur, owner *mvccpb.KeyValue, markMs int64) (raised, deleted bool, err error) {
	key, ownerKey := s.keys.mark(n), s.keys.owner(n)
	newest := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1)}
	var last *mvccpb.KeyValue // the newest journal key of n, read only when no one holds it
	lastRead := false
	for range raiseTries {
		mv, err := parseMark(cur)
		if err != nil {
			return false, false, err
		}
		raise := cur == nil || mv.MarkMs < markMs
		if !raise && owner == nil {
			// A claim made since the read starts at or above this mark,
			// which is already high enough.
			return false, false, nil
		}
		if owner == nil && !lastRead {
			resp, err := s.get(ctx, s.keys.journalOf(n), newest...)
			if err != nil {
				return false, false, fmt.Errorf("etcdstore: raise mark of machine %d: read its journal: %w; run RaiseMarks again (it is idempotent)", n, err)
			}
			last, lastRead = nil, true
			if len(resp.Kvs) > 0 {
				last = resp.Kvs[0]
			}
		}
		then := []clientv3.Op{clientv3.OpDelete(ownerKey)}
		if raise || owner != nil {
			// A holder fenced under a mark already higher gets the mark
			// rewritten too (never lowered), naming raise-marks: its next
			// renewal tells the operator's action from an expiry
			// (raisedSince).
			then = append(then, clientv3.OpPut(key, encode(markValue{MarkMs: max(markMs, mv.MarkMs), Holder: raiseMarksHolder})))
		}
		end := endValue{End: lease.EndRaised, EndMs: mv.MarkMs, EndedMs: s.nowMs()}
		switch {
		case owner != nil:
			then = append(then, s.endOp(n, claimID(clientv3.LeaseID(owner.Lease)), owner.CreateRevision, false, end))
		case last != nil:
			if c, isEnd, ok := journalKey(s.keys.journalOf(n), string(last.Key)); ok && !isEnd {
				then = append(then, s.endOp(n, c, last.CreateRevision, true, end))
			}
		}
		resp, err := s.txn(ctx,
			append(unchanged(key, cur), clientv3.Compare(clientv3.CreateRevision(ownerKey), "=", createRev(owner))),
			then,
			[]clientv3.Op{clientv3.OpGet(key), clientv3.OpGet(ownerKey), clientv3.OpGet(s.keys.journalOf(n), newest...)})
		if err != nil {
			return false, false, fmt.Errorf("etcdstore: raise mark of machine %d: %w; run RaiseMarks again (it is idempotent)", n, err)
		}
		if resp.Succeeded {
			del := resp.Responses[0].GetResponseDeleteRange()
			return raise, del != nil && del.Deleted > 0, nil
		}
		cur, owner, last, lastRead = kvAt(resp, 0), kvAt(resp, 1), kvAt(resp, 2), true
	}
	return false, false, fmt.Errorf("etcdstore: raise mark of machine %d: it kept changing under %d attempts; run RaiseMarks again", n, raiseTries)
}
