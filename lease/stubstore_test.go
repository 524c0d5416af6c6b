package lease_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/lease"
)

// stubStore is an in-memory store of one machine number, for the keeper's
// fast tests: it answers Claim, Extend, Release and Get with the two rules
// (a new token per claim, extensions compared on it; the mark a
// reservation the next claim starts at or above), and the windows etcd's
// store has. Everything else of lease.Store is absent (nil): the keeper of
// a one-step schedule asks for nothing more.
type stubStore struct {
	lease.Store
	machine int
	// clk, if set, is advanced by claimTakes inside every Claim: a claim
	// that commits and then takes a while to return.
	clk        *fakeclock.Clock
	claimTakes time.Duration

	mu     sync.Mutex
	holder string
	token  uint64
	claim  string
	markMs int64
	claims int
}

func (s *stubStore) MaxRestoreWindow() time.Duration { return etcdstore.MaxRestoreWindow }

// Region: the stub's leases live in keyspace 0, a one-region fleet's.
func (s *stubStore) Region() int                    { return 0 }
func (s *stubStore) MaxNoticeWindow() time.Duration { return etcdstore.MaxNoticeWindow }

// RegistryReader: the stub keeps no region registry, as a store of a
// one-region fleet; StartKeeper asks for it before its first claim.
func (s *stubStore) RegistryReader() lease.RegistryReader { return nil }

func (s *stubStore) Claim(_ context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder != "" || !req.Range.Contains(s.machine) {
		return nil, lease.ErrNoFreeNumber
	}
	s.claims++
	s.holder, s.token, s.claim = req.Holder, s.token+1, fmt.Sprintf("claim-%d", s.claims)
	l := &lease.Lease{Machine: s.machine, Holder: s.holder, Token: s.token, Claim: s.claim,
		StartMs: max(s.markMs, req.NowMs), MarkMs: s.markMs, Schedule: req.Schedule}
	if s.clk != nil {
		s.clk.Advance(s.claimTakes)
	}
	return l, nil
}

func (s *stubStore) Extend(_ context.Context, l *lease.Lease, markMs int64, _ time.Duration) (*lease.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder != l.Holder || s.token != l.Token || s.claim != l.Claim {
		return nil, fmt.Errorf("%w: machine %d", lease.ErrLost, s.machine)
	}
	s.markMs = max(s.markMs, markMs)
	nl := *l
	nl.MarkMs = s.markMs
	return &nl, nil
}

func (s *stubStore) Release(_ context.Context, l *lease.Lease, markMs int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder != l.Holder || s.token != l.Token || s.claim != l.Claim {
		return lease.ErrLost
	}
	s.holder, s.markMs = "", markMs
	return nil
}

func (s *stubStore) Get(context.Context, int) (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return lease.Record{Machine: s.machine, Holder: s.holder, Token: s.token, Claim: s.claim, MarkMs: s.markMs}, nil
}

// steal takes the number from its holder, as a claim by another process
// would (here: it is simply freed, so the keeper's next claim gets it back
// under a new token).
func (s *stubStore) steal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holder = ""
}

// restore puts the store back to a state in which the number was never
// claimed, as a restore from a backup taken before its claims would: no
// holder, and no mark.
func (s *stubStore) restore() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holder, s.markMs = "", 0
}
