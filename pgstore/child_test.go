//go:build linux

package pgstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/internal/testkit/soaktest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// Child holder processes for the soak: the parent re-executes this test
// binary with soakChildEnv set to a JSON soakConfig, and TestSoakChild runs
// keepers and generators on the table, sending one flushed frame per event
// as internal/testkit/soaktest describes; its request counts (Out.Counts, a stats
// frame) are
//
//	stats 0 <stmts> <calls> <extends> <ms>
//	                             SQL statements sent, lease.Store calls and
//	                             of them Extends (renewals) made so far, in
//	                             ms of the process's life
const soakChildEnv = "SNOWFENCE_PG_SOAK_CHILD"

type soakConfig struct {
	URL, Table string
	soaktest.HolderSpec
}

// stmtCounter is a pgx.QueryTracer counting the statements the pool sends
// to the server: the store's requests, as the database sees them.
type stmtCounter struct{ n atomic.Int64 }

func (c *stmtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *stmtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countingStore counts the lease.Store calls made on it (a Claim may send
// several statements: a scan, then one upsert per candidate tried). The
// counts are the process's: the siblings Keyspace opens count into the
// countingStore they were opened from.
type countingStore struct {
	lease.Store
	n, extends *atomic.Int64
}

// newCountingStore counts the calls made on s.
func newCountingStore(s lease.Store) *countingStore {
	return &countingStore{Store: s, n: new(atomic.Int64), extends: new(atomic.Int64)}
}

// Keyspace opens the real store's sibling behind a countingStore sharing
// s's counts.
func (s *countingStore) Keyspace(index int) (lease.Store, error) {
	sib, err := s.Store.Keyspace(index)
	if err != nil {
		return nil, err
	}
	return &countingStore{Store: sib, n: s.n, extends: s.extends}, nil
}

func (s *countingStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	s.n.Add(1)
	return s.Store.Claim(ctx, req)
}

func (s *countingStore) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	s.n.Add(1)
	s.extends.Add(1)
	return s.Store.Extend(ctx, l, markMs, leaseFor)
}

func (s *countingStore) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	s.n.Add(1)
	return s.Store.Release(ctx, l, markMs)
}

func (s *countingStore) Get(ctx context.Context, machine int) (lease.Record, error) {
	s.n.Add(1)
	return s.Store.Get(ctx, machine)
}

// TestSoakChild is not a test: it is the body of a soak child process, and
// skips unless TestSoakKilledHoldersNeverDuplicate started it.
func TestSoakChild(t *testing.T) {
	soaktest.ChildMain(t, soakChildEnv, "TestSoakKilledHoldersNeverDuplicate", func(ctx context.Context, cfg soakConfig, out *soaktest.Out) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		pcfg, err := pgxpool.ParseConfig(cfg.URL)
		if err != nil {
			out.Fatal(err)
			return
		}
		stmts := &stmtCounter{}
		pcfg.MaxConns = int32(2 + cfg.Holders)
		pcfg.ConnConfig.Tracer = stmts
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		pool, err := pgxpool.NewWithConfig(cctx, pcfg)
		if err == nil {
			err = pool.Ping(cctx)
		}
		ccancel()
		if err != nil {
			if ctx.Err() == nil { // else told to exit while starting up
				out.Fatal(err)
			}
			return
		}
		defer pool.Close()
		ps, err := pgstore.New(pool, pgstore.Config{Table: cfg.Table, TestBound: testbound.Of(cfg.SelfFence)})
		if err != nil {
			out.Fatal(err)
			return
		}
		s := newCountingStore(ps)
		born := time.Now()
		stop := soaktest.Reporter(ctx, out, cfg.HolderSpec, 200*time.Millisecond, func() []int64 {
			return []int64{stmts.n.Load(), s.n.Load(), s.extends.Load(), time.Since(born).Milliseconds()}
		})
		soaktest.RunHolders(ctx, cfg.HolderSpec, s, out)
		cancel()
		stop()
	})
}
