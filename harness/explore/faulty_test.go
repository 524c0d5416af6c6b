package explore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// Faults injected by faultyStore. Neither is a typed lease error, so the
// keeper treats both as a call of unknown outcome.
var (
	errLostReply = errors.New("explore: the reply was lost after the store ran the call (injected)")
	errCutOff    = errors.New("explore: the store is unreachable from this process (injected outage)")
)

// faultyStore is a lease.Admin in front of a real one that can lose the
// replies of calls it made (the write happened, the caller hears an error)
// and cut its caller off (every call fails without reaching the store).
//
// Its faults belong to the process, not to one keyspace: the siblings
// Keyspace opens share the fault controls and counters of the faultyStore
// they were opened from (its root), so an outage cuts the process off from
// every keyspace at once, a budget of lost replies is spent by whichever
// writes come next, and counts sums over all of them.
type faultyStore struct {
	lease.Admin
	// root is the faultyStore whose fault state this one uses; nil: its
	// own (the one the world made).
	root *faultyStore

	mu       sync.Mutex
	loseNext int  // lose the replies of this many writes
	down     bool // cut off
	lost     int  // replies lost so far
	refused  int  // calls refused while cut off
	// lostClaims are the numbers, by (keyspace, machine), whose claim
	// succeeded with its reply lost: the journal has an entry the claimer
	// never heard of.
	lostClaims map[[2]int]bool
}

// faults returns the faultyStore whose fault state f uses.
func (f *faultyStore) faults() *faultyStore {
	if f.root != nil {
		return f.root
	}
	return f
}

// Keyspace opens the real store's sibling on keyspace index behind a
// faultyStore sharing f's faults. It is never refused while cut off: no
// store sends a request to open a sibling.
func (f *faultyStore) Keyspace(index int) (lease.Store, error) {
	return f.AdminKeyspace(index)
}

// AdminKeyspace is Keyspace for the operator's actions.
func (f *faultyStore) AdminKeyspace(index int) (lease.Admin, error) {
	sib, err := f.Admin.AdminKeyspace(index)
	if err != nil {
		return nil, err
	}
	return &faultyStore{Admin: sib, root: f.faults()}, nil
}

// loseReplies makes the next n writes (Claim, Extend, Release) run and
// then fail as if their replies were lost.
func (f *faultyStore) loseReplies(n int) {
	f = f.faults()
	f.mu.Lock()
	f.loseNext += n
	f.mu.Unlock()
}

// cutOff makes every call fail without reaching the store (on), or lets
// them through again (off).
func (f *faultyStore) cutOff(on bool) {
	f = f.faults()
	f.mu.Lock()
	f.down = on
	f.mu.Unlock()
}

// counts returns the replies lost and the calls refused so far.
func (f *faultyStore) counts() (lost, refused int) {
	f = f.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lost, f.refused
}

// enter reports whether the call may reach the store.
func (f *faultyStore) enter() error {
	f = f.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		f.refused++
		return errCutOff
	}
	return nil
}

// leave decides whether a write's reply is lost.
func (f *faultyStore) leave() bool {
	f = f.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loseNext > 0 {
		f.loseNext--
		f.lost++
		return true
	}
	return false
}

func (f *faultyStore) Claim(ctx context.Context, req lease.ClaimRequest) (*lease.Lease, error) {
	if err := f.enter(); err != nil {
		return nil, err
	}
	l, err := f.Admin.Claim(ctx, req)
	if err == nil && f.leave() {
		f.lostClaim(l)
		return nil, errLostReply
	}
	return l, err
}

// lostClaim notes the number of a claim whose reply was lost.
func (f *faultyStore) lostClaim(l *lease.Lease) {
	f = f.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lostClaims == nil {
		f.lostClaims = map[[2]int]bool{}
	}
	f.lostClaims[[2]int{l.Region, l.Machine}] = true
}

// lostClaimOn reports whether a claim of machine in keyspace ks succeeded
// with its reply lost.
func (f *faultyStore) lostClaimOn(ks, machine int) bool {
	f = f.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lostClaims[[2]int{ks, machine}]
}

func (f *faultyStore) Extend(ctx context.Context, l *lease.Lease, markMs int64, leaseFor time.Duration) (*lease.Lease, error) {
	if err := f.enter(); err != nil {
		return nil, err
	}
	nl, err := f.Admin.Extend(ctx, l, markMs, leaseFor)
	if f.leave() {
		return nil, errLostReply
	}
	return nl, err
}

func (f *faultyStore) Release(ctx context.Context, l *lease.Lease, markMs int64) error {
	if err := f.enter(); err != nil {
		return err
	}
	err := f.Admin.Release(ctx, l, markMs)
	if f.leave() {
		return errLostReply
	}
	return err
}

func (f *faultyStore) Get(ctx context.Context, machine int) (lease.Record, error) {
	if err := f.enter(); err != nil {
		return lease.Record{}, err
	}
	return f.Admin.Get(ctx, machine)
}

func (f *faultyStore) List(ctx context.Context) ([]lease.Record, error) {
	if err := f.enter(); err != nil {
		return nil, err
	}
	return f.Admin.List(ctx)
}

// Registry and RegistryIdentity are reads a keeper may make at start (its
// region's entry, its store's identity): a process cut off cannot make
// them either.
func (f *faultyStore) Registry(ctx context.Context) (registry.Registry, error) {
	if err := f.enter(); err != nil {
		return registry.Registry{}, err
	}
	return f.Admin.Registry(ctx)
}

func (f *faultyStore) RegistryIdentity(ctx context.Context) (string, error) {
	if err := f.enter(); err != nil {
		return "", err
	}
	return f.Admin.RegistryIdentity(ctx)
}

func (f *faultyStore) FleetSchedule(ctx context.Context) (lease.FleetSchedule, error) {
	if err := f.enter(); err != nil {
		return lease.FleetSchedule{}, err
	}
	return f.Admin.FleetSchedule(ctx)
}

// RegistryReader returns f, so that a keeper's reads at start go through
// the faults above (the store's own would pass them by).
func (f *faultyStore) RegistryReader() lease.RegistryReader { return f }

// reopen returns a faultyStore in front of st, a store the same process
// opened anew (restartFresh), with f's fault state carried over: the
// outage and the budget of lost replies are the process's, and the counts
// and the claims whose replies were lost go on being reported.
func (f *faultyStore) reopen(st lease.Admin) *faultyStore {
	f = f.faults()
	f.mu.Lock()
	defer f.mu.Unlock()
	n := &faultyStore{Admin: st, loseNext: f.loseNext, down: f.down, lost: f.lost, refused: f.refused}
	if f.lostClaims != nil {
		n.lostClaims = make(map[[2]int]bool, len(f.lostClaims))
		for k, v := range f.lostClaims {
			n.lostClaims[k] = v
		}
	}
	return n
}
