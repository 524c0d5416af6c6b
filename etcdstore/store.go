package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

var (
	_ lease.Store    = (*Store)(nil)
	_ lease.Admin    = (*Store)(nil)
	_ registry.Store = (*Store)(nil)
)

// RegistryReader returns s: the store keeps its copy of the region
// registry and its fleet schedule record beside the leases.
func (s *Store) RegistryReader() lease.RegistryReader { return s }

// ErrClosed is returned by every method of a Store after Close.
var ErrClosed = errors.New("etcdstore: store closed")

// A Store keeps machine-number leases in etcd (see the package doc). It is
// safe for concurrent use.
type Store struct {
	cli           *clientv3.Client
	ownsClient    bool
	keys          keyspace
	region        int
	log           *slog.Logger
	reqTimeout    time.Duration
	restoreMargin time.Duration
	marginSet     bool // Config.RestoreMargin was given, not defaulted
	clock         snowfence.Clock
	cfg           Config // as given to New, for Keyspace

	// mu and hist are shared by the Store values of one prefix that
	// Keyspace opened from one another: a restore etcd went through is
	// one event for every keyspace, so whichever notices it fences the
	// leases of all of them and floors the claims of all of them. mu also
	// guards the Store's own closed and leases.
	mu     *sync.Mutex
	closed bool
	hist   *history
	leases map[leaseKey]*held
	// renewals are the renewal values this Store value wrote for its
	// leases (lease.Renewals).
	renewals lease.Renewals
}

// New returns a Store that keeps its keys in the etcd cli talks to. The
// caller keeps ownership of cli: Close leaves it open, and the caller
// closes it after closing the Store. Connect makes a Store that owns its
// client.
func New(cli *clientv3.Client, cfg Config) (*Store, error) {
	if cli == nil {
		return nil, fmt.Errorf("%w: etcdstore.New: nil client", lease.ErrInvalid)
	}
	given := cfg
	marginSet := cfg.RestoreMargin > 0
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Store{
		cfg:           given,
		mu:            new(sync.Mutex),
		hist:          new(history),
		cli:           cli,
		keys:          newKeyspace(cfg.Prefix, cfg.Region),
		region:        cfg.Region,
		log:           cfg.Logger.With("store", "etcd", "prefix", cfg.Prefix),
		reqTimeout:    cfg.RequestTimeout,
		restoreMargin: cfg.RestoreMargin,
		marginSet:     marginSet,
		clock:         cfg.Clock,
		leases:        make(map[leaseKey]*held),
	}, nil
}

// Close marks the store closed: later calls return ErrClosed. It closes the
// etcd client only if the store opened it (Connect). Leases stay as they
// are: release them first, or they expire with their etcd leases.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.ownsClient {
		return s.cli.Close()
	}
	return nil
}

// Region is the region whose machine numbers the store leases.
func (s *Store) Region() int { return s.region }

// open returns ErrClosed after Close.
func (s *Store) open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// txn runs a transaction and checks its header for a restore. Reads inside
// a transaction are linearizable.
func (s *Store) txn(ctx context.Context, cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	b := s.baseline()
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
	if err != nil {
		return nil, err
	}
	s.observe(b, resp.Header)
	return resp, nil
}

// get runs a linearizable range read and checks its header for a restore.
func (s *Store) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	b := s.baseline()
	resp, err := s.cli.Get(ctx, key, opts...)
	if err != nil {
		return nil, err
	}
	s.observe(b, resp.Header)
	return resp, nil
}

// detached returns a context for the store's own follow-up requests, which
// must run even when the caller's context has ended.
func (s *Store) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.reqTimeout)
}

// revoke revokes an etcd lease, deleting every key attached to it; failures
// are logged, since the lease expires with its TTL anyway.
func (s *Store) revoke(ctx context.Context, id clientv3.LeaseID, machine int) {
	ctx, cancel := s.detached(ctx)
	defer cancel()
	if _, err := s.cli.Revoke(ctx, id); err != nil {
		s.log.Warn("revoking etcd lease failed; it expires with its TTL", "machine", machine, "region", s.region,
			"etcd_lease", fmt.Sprintf("%x", int64(id)), "error", err)
	}
}

// kvAt returns the first key of the i-th response of a transaction, or nil
// if that response is not a range or found nothing.
func kvAt(resp *clientv3.TxnResponse, i int) *mvccpb.KeyValue {
	if i >= len(resp.Responses) {
		return nil
	}
	r := resp.Responses[i].GetResponseRange()
	if r == nil || len(r.Kvs) == 0 {
		return nil
	}
	return r.Kvs[0]
}
