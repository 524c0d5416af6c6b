package etcdstore_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// testTimeout bounds every store call in the tests.
const testTimeout = 30 * time.Second

// ctxFor returns a context that ends with the test or after testTimeout.
func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newStore returns a store on cli whose keys live under a prefix of the
// test's own, logging to the test's output.
func newStore(t testing.TB, cli *clientv3.Client, cfg etcdstore.Config) *etcdstore.Store {
	t.Helper()
	if cfg.Prefix == "" {
		cfg.Prefix = prefixFor(t)
	}
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

// prefixFor is the key prefix of the test's store.
func prefixFor(t testing.TB) string { return "/t/" + strings.ReplaceAll(t.Name(), "/", "_") }

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

// ownerLease returns the etcd lease the owner key of machine n is bound to.
func ownerLease(t testing.TB, cli *clientv3.Client, prefix string, n int) clientv3.LeaseID {
	t.Helper()
	key := prefix + "/0/owner/" + strconv.Itoa(n)
	resp, err := cli.Get(ctxFor(t), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatalf("no owner key %s", key)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// mustExtend extends l to markMs for a 10 s lease (leasetest.MustExtend).
func mustExtend(t testing.TB, s lease.Store, l *lease.Lease, markMs int64) *lease.Lease {
	t.Helper()
	return leasetest.MustExtend(t, s, l, markMs, 10*time.Second)
}
