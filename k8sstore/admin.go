package k8sstore

import (
	"context"
	"math"
	"slices"

	"github.com/snowfence/snowfence/lease"
)

var _ lease.Admin = (*Store)(nil)

// List implements lease.Admin: the record of every number of the store's
// keyspace that has a lease object, in numeric order, from one list of
// the keyspace's objects (a quorum read). What it reads is judged as Get
// judges an object (signs.go): lease.ErrRestored if it shows the data
// went back in time.
func (s *Store) List(ctx context.Context) ([]lease.Record, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	all := lease.Range{Lo: 0, Hi: math.MaxInt32}
	sp := s.beforeRange(all.Lo, all.Hi)
	os, err := s.list(ctx, all)
	if err != nil {
		return nil, err
	}
	if err := s.sawList(sp, os); err != nil {
		return nil, err
	}
	ns := make([]int, 0, len(os))
	for n := range os {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	recs := make([]lease.Record, len(ns))
	for i, n := range ns {
		recs[i] = s.asRecord(n, os[n])
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

// nowMs is the store's clock (Config.Clock), for the operator's writes'
// spec and journal ends: for people, never for deciding anything.
func (s *Store) nowMs() int64 { return s.cfg.Clock.Now().WallMs }
