package zkstore

import (
	"context"
	"fmt"
	"math"
	"slices"

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
// record rec under a new claim nonce (rec.Claim): the lease znode created
// (with the used marker, unless used) or set on the version read, the old
// claim's child deleted (which fails unless the record read is still the
// current one's), the new claim's child created. The lease znode's op
// comes first.
func (s *Store) newClaimOps(n int, z znode, rec record, used bool) []any {
	if !z.exists {
		ops := []any{&zk.CreateRequest{Path: s.path(n), Data: encode(rec), Acl: s.acl()},
			&zk.CreateRequest{Path: s.childPath(n, rec.Claim), Acl: s.acl()}}
		return append(ops, s.usedOps(used)...)
	}
	ops := []any{&zk.SetDataRequest{Path: s.path(n), Data: encode(rec), Version: z.stat.version}}
	if z.rec.Claim != "" {
		ops = append(ops, &zk.DeleteRequest{Path: s.childPath(n, z.rec.Claim), Version: -1})
	}
	return append(ops, &zk.CreateRequest{Path: s.childPath(n, rec.Claim), Acl: s.acl()})
}

// sameClaimOps are the ops of a write that gives number n, read as z
// (which exists), the record rec under the same claim nonce: the lease
// znode set on the version read, with a check that the claim's child
// exists (a write planned on one claim lands only while that claim's
// record is current, whatever versions a restore repeats). The lease
// znode's op comes first.
func (s *Store) sameClaimOps(n int, z znode, rec record) []any {
	ops := []any{&zk.SetDataRequest{Path: s.path(n), Data: encode(rec), Version: z.stat.version}}
	if z.rec.Claim != "" {
		ops = append(ops, &zk.CheckVersionRequest{Path: s.childPath(n, z.rec.Claim), Version: -1})
	}
	return ops
}

// written is the znode a multi-op whose first op wrote rec on number n
// left, as far as its answer tells (a create's answer has no stat).
func written(rec record, res []zk.MultiResponse) znode {
	z := znode{exists: true, rec: rec}
	if len(res) > 0 {
		z.stat = statOf(res[0].Stat)
	}
	return z
}
