package zkstore

import (
	"context"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/lease"
)

var (
	_ lease.Admin                = (*Store)(nil)
	_ lease.UnusedScheduleSetter = (*Store)(nil)
)

// List implements lease.Admin: the record of every number of the store's
// keyspace that has a lease znode, in numeric order, read after a sync.
// What it reads is judged as Get judges a znode (signs.go):
// lease.ErrRestored if it shows the data went back in time.
func (s *Store) List(ctx context.Context) ([]lease.Record, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	all := lease.Range{Lo: 0, Hi: math.MaxInt32}
	sp := s.beforeRange(all.Lo, all.Hi)
	g := generation(s.c)
	if err := s.sync(ctx); err != nil {
		return nil, fmt.Errorf("zkstore: list region %d: %w", s.region, err)
	}
	zs, dir, err := s.scan(ctx, all)
	if err == nil && generation(s.c) != g {
		err = errSwapped
	}
	if err != nil {
		return nil, fmt.Errorf("zkstore: list region %d: %w; retry", s.region, err)
	}
	if err := s.sawScan(sp, zs); err != nil {
		return nil, err
	}
	if err := s.sawPathStat(sp, s.regionPath(), fmt.Sprintf("the znode of region %d", s.region), dir); err != nil {
		return nil, err
	}
	ns := make([]int, 0, len(zs))
	for n := range zs {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	recs := make([]lease.Record, len(ns))
	for i, n := range ns {
		recs[i] = s.asRecord(n, zs[n])
	}
	return recs, nil
}

// AdminKeyspace implements lease.Admin: Keyspace as a lease.Admin, for the
// operator's actions on keyspace index.
func (s *Store) AdminKeyspace(index int) (lease.Admin, error) {
	ks, err := s.Keyspace(index)
	if err != nil {
		return nil, err
	}
	return ks.(*Store), nil
}

// adminRead syncs and reads number n's znode, and whether the used marker
// exists (meta.go), all on one session, for an operator's write.
func (s *Store) adminRead(ctx context.Context, n int) (znode, bool, error) {
	g := generation(s.c)
	if err := s.sync(ctx); err != nil {
		return znode{}, false, err
	}
	z, err := s.get(ctx, n)
	if err != nil {
		return znode{}, false, err
	}
	used, err := s.used(ctx)
	if err == nil && generation(s.c) != g {
		err = errSwapped
	}
	return z, used, err
}

// newClaimOps are the ops of a write that gives number n, read as z, the
// record rec under a new claim nonce (rec.Claim): claimOps (the old
// claim's child replaced by rec's), with the create of the used marker
// when the write creates the lease znode and the marker was read absent.
func (s *Store) newClaimOps(n int, z znode, rec record, used bool) []any {
	ops := s.claimOps(n, z, rec)
	if !z.exists {
		ops = append(ops, s.usedOps(used)...)
	}
	return ops
}

// sameClaimOps are the ops of a write that gives number n, read as z
// (which exists), the record rec under the same claim nonce: keepOps (the
// claim's child checked, so a write planned on one claim lands only while
// that claim's record is current, whatever versions a restore repeats).
func (s *Store) sameClaimOps(n int, z znode, rec record) []any {
	return s.keepOps(n, z.rec.Claim, encode(rec), z.stat.version)
}

// written is the znode the multi-op ops, which wrote rec on number n, left
// as far as its answer res tells (a create's answer has no stat).
func (s *Store) written(n int, rec record, ops []any, res []zk.MultiResponse) znode {
	return znode{exists: true, rec: rec, stat: statOf(s.multiStat(n, ops, res))}
}

// childFailed reports whether the op that failed the multi-op ops (answer
// res) is the check or the delete of a claim's child: the claim is no
// longer the znode's, though its data version may be the one read.
func childFailed(ops []any, res []zk.MultiResponse) bool {
	f := failedOp(res)
	if f < 0 || f >= len(ops) {
		return false
	}
	switch o := ops[f].(type) {
	case *zk.CheckVersionRequest:
		return strings.HasPrefix(path.Base(o.Path), childPrefix)
	case *zk.DeleteRequest:
		return strings.HasPrefix(path.Base(o.Path), childPrefix)
	}
	return false
}

// adminChildGone is the error of an operator's write on number n whose
// record, read again at the version its write was planned on, has lost
// its claim's child znode: deleted by hand (a restore brings a record
// back with its child), so no write can prove the claim.
func (s *Store) adminChildGone(n int, z znode) error {
	return fmt.Errorf("zkstore: machine %d region %d: the child znode %s of the record's claim is gone though the record is unchanged "+
		"(deleted by hand?): create it again (empty), then retry", n, s.region, s.childPath(n, z.rec.Claim))
}
