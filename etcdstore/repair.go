package etcdstore

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/lease"
)

// repairTries bounds the compare-and-swap attempts of one mark repair.
const repairTries = 5

// repairMark raises the mark of l's number to markMs if it is lower, with
// a compare on the mark key's mod revision so that a mark written since is
// never lowered. Failures are logged: the operator's RaiseMarks is the
// remedy the error message points to anyway.
func (s *Store) repairMark(ctx context.Context, l *lease.Lease, markMs int64) {
	ctx, cancel := s.detached(ctx)
	defer cancel()
	key := s.keys.mark(l.Machine)
	for range repairTries {
		resp, err := s.cli.Get(ctx, key)
		if err != nil {
			s.log.Warn("writing back the mark lost by the restore failed; raise marks (RaiseMarks) before holders claim again",
				"machine", l.Machine, "region", s.region, "mark", lease.FormatMs(markMs), "error", err)
			return
		}
		var cur int64
		var rev int64
		if len(resp.Kvs) > 0 {
			mv, err := parseMark(resp.Kvs[0])
			if err != nil {
				return
			}
			cur, rev = mv.MarkMs, resp.Kvs[0].ModRevision
		}
		if cur >= markMs {
			return
		}
		put, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, encode(markValue{MarkMs: markMs, Token: l.Token, Holder: l.Holder}))).Commit()
		if err != nil {
			s.log.Warn("writing back the mark lost by the restore failed; raise marks (RaiseMarks) before holders claim again",
				"machine", l.Machine, "region", s.region, "mark", lease.FormatMs(markMs), "error", err)
			return
		}
		if put.Succeeded {
			s.log.Warn("wrote back the mark the restore lost", "machine", l.Machine, "region", s.region, "token", l.Token,
				"mark", lease.FormatMs(markMs), "restored_mark", lease.FormatMs(cur))
			return
		}
	}
}
