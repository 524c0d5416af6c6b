package lease_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// errReplyLost is what cloneOnExtend's Extend returns: an error of unknown
// outcome.
var errReplyLost = errors.New("test: the extension's reply was lost")

// cloneOnExtend is a keeper's store whose next Extend, once armed, never
// reaches the store: instead a clone of the holder — a second Store value
// on the same keys, given a copy of the lease, as a cloned process holds
// it — extends the lease further ahead, and the call fails with an error
// of unknown outcome. The keeper then re-reads a record with its own
// holder, token and claim and a mark above the one it asked for, written
// by someone else.
type cloneOnExtend struct {
	lease.Store
	clone  lease.Store
	armed  atomic.Bool
	cloned atomic.Pointer[lease.Lease] // the clone's lease after its extension
}

func (s *cloneOnExtend) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	if !s.armed.CompareAndSwap(true, false) {
		return s.Store.Extend(ctx, l, markMs, leaseFor)
	}
	cl := *l
	nl, err := s.clone.Extend(ctx, &cl, markMs+time.Minute.Milliseconds(), leaseFor)
	if err != nil {
		return nil, err
	}
	s.cloned.Store(nl)
	return nil, errReplyLost
}

// A keeper whose extension failed with an error of unknown outcome re-reads
// its record (reread). A clone's extension of the same claim leaves holder,
// token and claim as they were and a mark above the one asked for: taken
// for the keeper's own, it would publish a grant up to the clone's mark.
// The record's renewal value is not the lease's, so the keeper asks the
// store again instead, and the store, which never sent that value, refuses
// with ErrLost: the keeper stops issuing at once.
func TestKeeperRereadIsNotFooledByAClone(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := &cloneOnExtend{Store: newStore(t, c.Endpoints()), clone: newStore(t, c.Endpoints())}
	clk := fakeclock.New(t0)
	h := mustHolder(t, s, clk, "cloned", lease.Range{Lo: 3, Hi: 3}, func(kc *lease.KeeperConfig) {
		kc.LeaseFor, kc.RenewEvery, kc.SelfFence = 10*time.Second, 2*time.Second, 5*time.Second
	})
	h.mint(10)
	before := h.k.Status()
	s.armed.Store(true)
	h.step(2 * time.Second) // the next renewal: the clone's write, the reply lost
	cl := s.cloned.Load()
	if cl == nil {
		t.Fatal("the clone did not extend: the keeper did not renew")
	}
	st := h.k.Status()
	if st.Losses != before.Losses+1 {
		t.Fatalf("keeper after re-reading the clone's write: %+v; want the lease lost (ErrLost), not the clone's mark %d taken for its own",
			st, cl.MarkMs)
	}
	if g, err := h.k.Grant(); err == nil && g.Token == cl.Token && g.LimitMs >= cl.MarkMs {
		t.Fatalf("the keeper published a grant up to the clone's mark: %+v", g)
	}
}
