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

// A LeaseView is everything a generator takes from its lease, and all it
// ever tells the lease: New reads the schedule, the clock and the
// placements, and binds the generator (Bind); every call reads the grant of
// the instant it issues at (GrantAt); a call refused at or past a grant's
// limit says so (MarkReached). The lease never reads the generator: the
// end of the last issued timestamp goes to the lease's owner
// (Generator.LastIssued), who records it when it releases the number
// (lease.Keeper.Close). Package lease's Keeper is the implementation that
// leases numbers from a store; Static is one for numbers assigned by hand.
//
// GrantAt and MarkReached are called under the generator's lock, GrantAt on
// every ID: both must be cheap and safe for concurrent use, and GrantAt must
// change no grant (a lease.Keeper notes the latest instant it was asked
// about: the generator issues at no later one, which bounds the mark it
// releases its number with).
type LeaseView interface {
	// GrantAt returns the grant for IDs at wall-clock millisecond wallMs
	// (Unix), or nil and an error that says why there is none (not
	// claimed yet, lost, quarantined). Across a layout cutover a lease
	// keeper holds one number for the layout before it and another for
	// the layout after it, so the grant depends on the instant. A grant
	// returned for an instant must still bound itself: StartMs and LimitMs
	// keep its IDs within the layout step it was leased for, so a grant
	// handed out for the wrong instant is refused by the generator, never
	// minted on.
	GrantAt(wallMs int64) (*Grant, error)
	// Schedule is the layout schedule the lease's numbers are claimed
	// under, which the generator must mint under (New takes it for a zero
	// Config.Schedule and refuses a different one), or the zero Schedule
	// for a lease with none of its own (Static).
	Schedule() Schedule
	// Clock is the clock the lease times its grants on (RenewedAt,
	// StartMono), which the generator must share (New takes it for a nil
	// Config.Clock and refuses one that does not read the same), or nil
	// for a lease whose grants carry no self-fence (Static). A lease
	// whose grants set SelfFence must return its clock: on another one
	// the self-fence would stop late.
	Clock() Clock
	// Placements returns what the grants may carry, one Placement per
	// stretch of time: New refuses a lease whose numbers a layout of the
	// schedule in force during a placement cannot hold. Nil checks
	// nothing at start; the generator still refuses, on every grant it
	// adopts, numbers its layout cannot hold.
	Placements() []Placement
	// Bind records that a generator mints on the lease; New calls it as
	// its last step, and fails with the error it returns. A generator's
	// last tick and sequence are the only record of what it issued on its
	// number: two generators on one lease would both start at sequence 0
	// in the same tick and mint the same IDs. A lease.Keeper therefore
	// refuses a second binding for the rest of its life, also after the
	// first generator was closed, with an error matching ErrLeaseBound.
	// Static binds any number of generators: a number assigned by hand is
	// the operator's to keep to one generator (see Static).
	Bind() error
	// MarkReached tells the lease that a call for an instant at or past
	// g's LimitMs was refused (its clock reached the reserved mark: the
	// wall clock stepped forward, or renewals are failing), so that it
	// may extend the mark before its next scheduled renewal. Only refused
	// calls make it; a lease with no renewals does nothing.
	MarkReached(g *Grant)
}

// staticLease is a LeaseView that never expires.
type staticLease struct{ g *Grant }

// GrantAt returns the one grant, whatever the instant.
func (s staticLease) GrantAt(int64) (*Grant, error) { return s.g, nil }

// Schedule is the zero Schedule: the generator's Config.Schedule applies.
func (staticLease) Schedule() Schedule { return Schedule{} }

// Clock is nil: the grant has no self-fence to time, and the generator's
// Config.Clock applies.
func (staticLease) Clock() Clock { return nil }

// Placements tells New the number, which it checks against the schedule.
func (s staticLease) Placements() []Placement {
	return []Placement{{Lo: s.g.Machine, Hi: s.g.Machine, Region: s.g.Region}}
}

// Bind accepts every generator (see Static).
func (staticLease) Bind() error { return nil }

// MarkReached does nothing: the grant has no limit to reach.
func (staticLease) MarkReached(*Grant) {}

// Static returns a LeaseView for a machine and region number assigned by hand,
// with no expiry and no fence. Use it for tests, tools and single processes;
// fleets should lease their numbers (lease.Keeper), where a store and the
// keeper check what follows. With Static nothing checks it: New checks only
// that the number fits every layout of the generator's Config.Schedule, and
// everything else is the operator's to keep, across every generator that
// mints into one ID space (docs/design.md, "Facts about the whole fleet"):
//
//   - Distinct numbers. No two generators hold the same machine number in
//     the same region at the same time; while any layout of the schedule has
//     no region bits (v1), no two hold the same machine number at all, since
//     the region is then not in the ID.
//   - The same region. Each generator's region is the region it runs in, the
//     one every generator of that region is given; numbers are distinct only
//     within it.
//   - One shared schedule. Every generator runs the same Config.Schedule: the
//     same layouts, the same cutover instants. Distinct numbers are not
//     enough across layouts: a generator still on v1 and one on v2 after a
//     cutover write the same low 22 bits for different numbers (v1 machine
//     128 is v2 region 1 machine 0, and v1 machine 1 is v2 machine 4, for
//     every sequence number below 1,024), and both mint the same IDs in the
//     same millisecond. A Static view reports no schedule, so nothing
//     compares one generator's with another's.
//   - One generator per view. Static binds any number of generators (Bind
//     accepts all): a second generator on the same number, in this process
//     or another, and a cloned process (a VM snapshot restored while the
//     original runs, a forked image) mint the same IDs.
//   - Clocks that never go back across a restart or a move. The generator
//     guards against its own earlier timestamps only within one process
//     life: a process restarted with its clock behind its last ID, or a
//     number moved to a host whose clock is behind the old host's last ID,
//     mints IDs already issued. Wait until the clock is past the last ID
//     (Generator.LastIssued, kept by the operator) before starting again.
func Static(machine, region int) LeaseView {
	return staticLease{&Grant{Machine: machine, Region: region, Token: 1, LimitMs: math.MaxInt64}}
}
