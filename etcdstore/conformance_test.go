package etcdstore_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
)

// TestConformance runs the lease-store conformance suites (the fence
// contract's, the operator's actions', the registry copy's) against an
// embedded etcd. etcd judges expiry itself (the owner key's etcd lease), so
// the harness expires a lease by revoking that etcd lease.
func TestConformance(t *testing.T) {
	t.Parallel()
	conformance(t, etcdtest.Start(t, 1).Client(t))
}

// conformance runs the suite against the etcd cli talks to, each check on
// a key prefix of its own.
func conformance(t *testing.T, cli *clientv3.Client) {
	var mu sync.Mutex
	prefixes := map[lease.Store]string{}
	seq := 0 // New's keyspaces, so that two in one check differ
	openOn := func(t *testing.T, cli *clientv3.Client, prefix string) lease.Store {
		s, err := etcdstore.New(cli, etcdstore.Config{Prefix: prefix, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
		if err != nil {
			t.Fatalf("etcdstore.New: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		mu.Lock()
		prefixes[s] = prefix
		mu.Unlock()
		return s
	}
	open := func(t *testing.T, prefix string) lease.Store { return openOn(t, cli, prefix) }
	newPrefix := func(t *testing.T) string {
		mu.Lock()
		seq++
		n := seq
		mu.Unlock()
		return fmt.Sprintf("/conformance/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), n)
	}
	prefixOf := func(s lease.Store) string {
		mu.Lock()
		defer mu.Unlock()
		return prefixes[s]
	}
	h := leasetest.Harness{
		New:    func(t *testing.T) lease.Store { return open(t, newPrefix(t)) },
		Reopen: func(t *testing.T, s lease.Store) lease.Store { return open(t, prefixOf(s)) },
		Expire: func(t *testing.T, s lease.Store, l *lease.Lease) {
			revokeOwner(t, cli, prefixOf(s), l.Machine)
		},
		// A client of its own, whose KV loses the reply of the next write.
		LoseReply: func(t *testing.T) (lease.Store, func()) {
			lc, err := clientv3.New(clientv3.Config{Endpoints: cli.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { lc.Close() })
			k := installFlaky(lc, func() fault { return pass })
			return openOn(t, lc, newPrefix(t)), k.loseNextWrite
		},
	}
	leasetest.Run(t, h)
	leasetest.RunAdmin(t, h)
	registrytest.Run(t, leasetest.RegistryHarness(h))
}

// revokeOwner revokes the etcd lease machine n's owner key is bound to,
// as its expiry would: the key goes, and the holder's next compare fails.
func revokeOwner(t *testing.T, cli *clientv3.Client, prefix string, n int) {
	t.Helper()
	if _, err := cli.Revoke(ctxFor(t), ownerLease(t, cli, prefix, n)); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
}
