package service

import (
	"fmt"

	"github.com/snowfence/snowfence"
)

// Connection caps: how many connections the service's listeners keep open,
// so that no flood of callers takes the process to its file-descriptor
// limit. At that limit accept fails, and so does every file the lease store
// opens: the embedded etcd's WAL purge fails and etcd exits the process
// with its lease unreleased, and the keeper cannot record its high-water
// mark. The caps keep a reserve of descriptors out of the callers' reach.

// DefaultMaxConnsPerPeer is the cap on one listener's open connections from
// one IP address when Config.MaxConnsPerPeer is zero (or the listener's cap,
// if lower). It is not small because callers behind a load balancer, a NAT
// or a sidecar proxy all come from its address: net/http clients open a
// connection per request in flight, and a busy balancer in front of a few
// holders keeps hundreds. It still keeps one address from taking more than
// about a twentieth of the descriptors at the usual limit (20,000 and up).
const DefaultMaxConnsPerPeer = 1024

const (
	// minFDReserve is the least of the file-descriptor limit the
	// listeners never use: it is kept for the lease store and the rest of
	// the process. An embedded etcd holder uses about 20 descriptors at
	// rest (its WAL and its directory, the bolt database, the keeper's and
	// etcd's own gRPC connections, the lock file); a WAL cut and purge, a
	// snapshot and a high-water mark write each open a few more for a
	// moment, and up to maxLingering refused connections wait here for
	// their callers to read the 503. 256 is ten times the resting use;
	// above a limit of 2,560, a tenth of the limit is kept instead, for
	// a store whose client pools grow with the process.
	minFDReserve = 256
	// maxFDLimit bounds the limit the budget is taken from: an
	// "unlimited" RLIMIT_NOFILE does not make memory for a million
	// connections.
	maxFDLimit = 1 << 20
	// minConnBudget is the smallest budget a service starts with: below
	// it the fd limit is too low to serve and keep the reserve.
	minConnBudget = 64
	// maxListenerFloor is the most connections each listener is sure of
	// whatever the others hold: with a budget of 8 × maxListenerFloor or
	// more, a flood on the API listener still leaves the admin listener
	// (health checks, metrics) maxListenerFloor connections.
	maxListenerFloor = 32
	// servedListeners is how many listeners share the budget at most:
	// the API listener and the admin listener.
	servedListeners = 2
)

// A ConnLimitsError is New's refusal of connection caps that cannot work: a
// negative cap, a cap above the file-descriptor budget, or a limit too low
// to keep the reserve. It wraps snowfence.ErrInvalidConfig.
type ConnLimitsError struct {
	// Field is the Config field at fault ("MaxConns", "MaxConnsPerPeer"),
	// or "" when the fd limit itself is too low.
	Field string
	// Value is the field's value.
	Value int
	// FDLimit is the process's open-files limit (RLIMIT_NOFILE) and Budget
	// the connections the listeners may hold together under it.
	FDLimit uint64
	Budget  int
}

func (e *ConnLimitsError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%v: the open-files limit (ulimit -n) is %d, which leaves %d connections beside the lease store's reserve; raise it to at least %d (20000 or more for a busy holder)",
			snowfence.ErrInvalidConfig, e.FDLimit, e.Budget, 2*minConnBudget)
	}
	if e.Value < 0 {
		return fmt.Sprintf("%v: %s is %d; give 0 for the default or a positive cap", snowfence.ErrInvalidConfig, e.Field, e.Value)
	}
	return fmt.Sprintf("%v: %s is %d, above the %d connections the open-files limit (ulimit -n %d) leaves beside the lease store's reserve; lower it (0: the budget), or raise the limit",
		snowfence.ErrInvalidConfig, e.Field, e.Value, e.Budget, e.FDLimit)
}

// Unwrap returns snowfence.ErrInvalidConfig.
func (e *ConnLimitsError) Unwrap() error { return snowfence.ErrInvalidConfig }

// connCaps are the caps the listeners enforce.
type connCaps struct {
	fdLimit uint64
	// budget is the connections every listener holds together: the fd
	// limit minus the reserve.
	budget int
	// perListener caps each listener (Config.MaxConns, or budget), and
	// perPeer each listener's connections from one IP address.
	perListener, perPeer int
	// floor is what each listener holds whatever the others do: the
	// budget beyond servedListeners floors is shared.
	floor int
}

// shared is the part of the budget beyond the listeners' floors.
func (c connCaps) shared() int { return c.budget - servedListeners*c.floor }

// fdBudget splits the open-files limit into the connections the listeners
// may hold and the reserve kept for the lease store and the rest of the
// process: max(minFDReserve, a tenth of the limit), but at most half of it.
func fdBudget(limit uint64) (budget, reserve int) {
	l := int(min(limit, maxFDLimit))
	reserve = min(max(minFDReserve, l/10), l/2)
	return l - reserve, reserve
}

// connCapsFor checks cfg's caps against the fd limit.
func connCapsFor(cfg Config, fdLimit uint64) (connCaps, error) {
	budget, _ := fdBudget(fdLimit)
	c := connCaps{fdLimit: fdLimit, budget: budget}
	refuse := func(field string, v int) (connCaps, error) {
		return connCaps{}, &ConnLimitsError{Field: field, Value: v, FDLimit: fdLimit, Budget: budget}
	}
	if budget < minConnBudget {
		return refuse("", 0)
	}
	switch {
	case cfg.MaxConns < 0 || cfg.MaxConns > budget:
		return refuse("MaxConns", cfg.MaxConns)
	case cfg.MaxConnsPerPeer < 0 || cfg.MaxConnsPerPeer > budget:
		return refuse("MaxConnsPerPeer", cfg.MaxConnsPerPeer)
	}
	if c.perListener = cfg.MaxConns; c.perListener == 0 {
		c.perListener = budget
	}
	if c.perPeer = cfg.MaxConnsPerPeer; c.perPeer == 0 {
		c.perPeer = DefaultMaxConnsPerPeer
	}
	c.perPeer = min(c.perPeer, c.perListener)
	c.floor = min(maxListenerFloor, budget/(4*servedListeners), c.perListener)
	return c, nil
}
