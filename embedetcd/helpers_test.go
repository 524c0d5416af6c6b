package embedetcd_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// testTimeout bounds every call in the tests.
const testTimeout = 30 * time.Second

// ctxFor returns a context that ends with the test or after testTimeout.
func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newStore returns an etcd store on cli, logging to the test's output.
func newStore(t testing.TB, cli *clientv3.Client, cfg etcdstore.Config) *etcdstore.Store {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	s, err := etcdstore.New(cli, cfg)
	if err != nil {
		t.Fatalf("etcdstore.New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// baseMs is a wall clock reading for requests; the store takes NowMs from
// the request, so tests pick it.
func baseMs() int64 { return time.Now().UnixMilli() }

// req builds a claim request for a range with generous limits.
func req(holder string, lo, hi int, nowMs int64) lease.ClaimRequest {
	return lease.ClaimRequest{
		Holder:   holder,
		Range:    lease.Range{Lo: lo, Hi: hi},
		NowMs:    nowMs,
		LeaseFor: 10 * time.Second,
		MaxAhead: time.Hour,
	}
}

// mustExtend extends l to markMs for a 10 s lease (leasetest.MustExtend).
func mustExtend(t testing.TB, s lease.Store, l *lease.Lease, markMs int64) *lease.Lease {
	t.Helper()
	return leasetest.MustExtend(t, s, l, markMs, 10*time.Second)
}
