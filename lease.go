package snowfence

import (
	"math"
	"time"
)

// A Grant is the right to issue IDs under one machine number for a stretch of
// wall time. A lease keeper publishes a new Grant after every claim and every
// renewal; the generator checks the current one on every call.
//
// Grants are immutable once published.
type Grant struct {
	// Machine and Region are the numbers written into every ID.
	Machine, Region int
	// Token is the lease's fencing token; a new claim always has a new one.
	Token uint64
	// StartMs is the first wall-clock millisecond (Unix) this grant may use
	// as a timestamp: just above the high-water mark the previous holder of
	// the number left behind.
	StartMs int64
	// LimitMs is the end of the reservation (Unix ms, exclusive): every
	// timestamp issued under this grant lies wholly before it. The keeper
	// writes it to the store, compared on Token, before publishing it.
	LimitMs int64
	// RenewedAt is the monotonic reading, on the generator's Clock, at which
	// the last acknowledged renewal was sent; RenewedWallMs is the wall
	// clock's in the same reading. The generator refuses the grant once
	// its wall clock has run ahead of its monotonic one since then (a
	// step, a host suspend).
	RenewedAt     time.Duration
	RenewedWallMs int64
	// SelfFence is how long after RenewedAt the generator stops issuing.
	// Zero disables the check, and the refusal after a forward jump of
	// the wall clock since RenewedAt.
	SelfFence time.Duration
	// StartMono is the monotonic reading, on the generator's Clock, before
	// which the grant may not be used (zero: none): a lease keeper times a
	// claim's notice window on the monotonic clock as well as in StartMs,
	// so that a wall clock stepped forward after the claim does not cut
	// it short.
	StartMono time.Duration
}

// A LeaseView tells a generator which machine number it may use and until
// when. Package lease's Keeper is the implementation that leases numbers from
// a store; Static is one for numbers assigned by hand.
//
// Grant is called on every ID and must be cheap and safe for concurrent use.
type LeaseView interface {
	// Grant returns the grant in force, or nil and an error that says why
	// there is none (not claimed yet, lost, quarantined).
	Grant() (*Grant, error)
}

// A SteppedLease is a LeaseView whose grant depends on the instant an ID is
// for: across a layout cutover a lease keeper holds one number for the
// layout before it and another for the layout after it. The generator asks
// GrantAt, with the wall-clock millisecond it is about to issue at, instead
// of Grant. A grant returned for an instant must still bound itself:
// StartMs and LimitMs keep its IDs within the layout step it was leased for,
// so a grant handed out for the wrong instant is refused by the generator,
// never minted on.
type SteppedLease interface {
	LeaseView
	// GrantAt returns the grant for IDs at wall-clock millisecond wallMs
	// (Unix), or nil and the reason there is none.
	GrantAt(wallMs int64) (*Grant, error)
}

// An ExclusiveLease is a LeaseView that feeds one generator only. A
// generator's last tick and sequence are the only record of what it issued
// on its number: two generators on one lease would both start at sequence
// 0 in the same tick and mint the same IDs. New binds the generator it
// makes to such a lease (Bind), as its last step, and fails with the error
// Bind returns; a lease.Keeper is one, and refuses a second binding for
// the rest of its life, also after the first generator was closed.
//
// Static is not: a number assigned by hand is the operator's to keep to
// one generator (see Static).
type ExclusiveLease interface {
	LeaseView
	// Bind records that a generator mints on the lease, and how to learn
	// the end of its last issued timestamp (Generator.LastIssued), which
	// the lease's owner records as the mark when it releases the number.
	// It fails, matching ErrLeaseBound, once a generator is bound.
	Bind(lastIssued func() int64) error
}

// staticLease is a LeaseView that never expires.
type staticLease struct{ g *Grant }

func (s staticLease) Grant() (*Grant, error) { return s.g, nil }

// Placements implements PlacedLease: New checks the number against the
// schedule.
func (s staticLease) Placements() []Placement {
	return []Placement{{Lo: s.g.Machine, Hi: s.g.Machine, Region: s.g.Region}}
}

// Static returns a LeaseView for a machine and region number assigned by hand,
// with no expiry and no fence. Uniqueness then rests entirely on the operator
// never running two generators with the same numbers — in one process or
// many: nothing binds a Static view to one generator —, and on a restarted
// process not reusing its own earlier timestamps (the generator only guards
// the latter within one process life). Use it for tests, tools and single
// processes; fleets should lease their numbers.
func Static(machine, region int) LeaseView {
	return staticLease{&Grant{Machine: machine, Region: region, Token: 1, LimitMs: math.MaxInt64}}
}
