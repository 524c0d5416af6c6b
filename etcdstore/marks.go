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

// RaiseMarks raises the mark of every number in r to at least markMs —
// numbers never claimed included, since they may have been claimed in the
// history a restore lost — so every later claim starts at or above it. Each
// mark is written with a compare on its mod revision, so a holder's
// concurrent extension is never overwritten with less (the holder's next
// Extend picks the raised mark up). The written value names token 0 and
// holder "raise-marks". It returns how many marks it changed; on an error,
// those changed before it.
func (s *Store) RaiseMarks(ctx context.Context, r lease.Range, markMs int64) (int, error) {
	if err := s.open(); err != nil {
		return 0, err
	}
	if err := checkRange(r); err != nil {
		return 0, err
	}
	resp, err := s.get(ctx, s.keys.kindPrefix(kindMark), clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("etcdstore: raise marks of %s: read them: %w", r, err)
	}
	marks := make(map[int]*mvccpb.KeyValue)
	for _, kv := range resp.Kvs {
		if kind, n, ok := s.keys.parse(string(kv.Key)); ok && kind == kindMark {
			marks[n] = kv
		}
	}
	changed := 0
	for n := r.Lo; n <= r.Hi; n++ {
		ok, err := s.raiseMark(ctx, n, marks[n], markMs)
		if err != nil {
			return changed, err
		}
		if ok {
			changed++
		}
	}
	s.log.Warn("raised marks", "region", s.region, "range", r.String(), "mark", msTime(markMs), "changed", changed)
	return changed, nil
}

// raiseMark raises one number's mark from cur (its key as last read, nil if
// absent) to markMs, re-reading on a conflict. It reports whether it wrote.
func (s *Store) raiseMark(ctx context.Context, n int, cur *mvccpb.KeyValue, markMs int64) (bool, error) {
	key := s.keys.mark(n)
	for range raiseTries {
		mv, err := parseMark(cur)
		if err != nil {
			return false, err
		}
		if cur != nil && mv.MarkMs >= markMs {
			return false, nil
		}
		resp, err := s.txn(ctx,
			[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", modRev(cur))},
			[]clientv3.Op{clientv3.OpPut(key, encode(markValue{MarkMs: markMs, Holder: raiseMarksHolder}))},
			[]clientv3.Op{clientv3.OpGet(key)})
		if err != nil {
			return false, fmt.Errorf("etcdstore: raise mark of machine %d: %w; run RaiseMarks again (it is idempotent)", n, err)
		}
		if resp.Succeeded {
			return true, nil
		}
		cur = kvAt(resp, 0)
	}
	return false, fmt.Errorf("etcdstore: raise mark of machine %d: it kept changing under %d attempts; run RaiseMarks again", n, raiseTries)
}
