package lease_test

import (
	"context"
	"errors"
	"testing"

	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// downRegistry is a registry reader whose reads fail as a store that does
// not answer would, and which runs cancel at the first read: the caller's
// context ends while StartKeeper retries.
type downRegistry struct {
	lease.RegistryReader // nil: only Registry is called
	cancel               context.CancelFunc
}

func (d *downRegistry) Registry(context.Context) (registry.Registry, error) {
	d.cancel()
	return registry.Registry{}, errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
}

type downRegistryStore struct {
	*stubStore
	rr *downRegistry
}

func (s *downRegistryStore) RegistryReader() lease.RegistryReader { return s.rr }

// A start whose context ends while the registry cannot be read says so in
// a way errors.Is finds (context.Canceled), beside the store's last error:
// a service stopped (SIGTERM) during a store outage at start stops cleanly
// rather than as a failure.
func TestStartKeeperRegistryRetryKeepsTheContextError(t *testing.T) {
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	st := &downRegistryStore{stubStore: &stubStore{machine: 5}, rr: &downRegistry{cancel: cancel}}
	_, err := lease.StartKeeper(ctx, lease.KeeperConfig{Store: st, Holder: "h", Range: &lease.Range{Lo: 5, Hi: 5}, Clock: fakeclock.New(t0)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("StartKeeper = %v; want an error errors.Is finds context.Canceled in", err)
	}
	t.Logf("StartKeeper: %v", err)
}
