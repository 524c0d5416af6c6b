package lease

import "time"

// State is where a Keeper is in its lease's life.
type State string

const (
	// StateClaiming: no number held yet, or re-claiming after a loss.
	StateClaiming State = "claiming"
	// StateHeld: a number is held and its mark is ahead of the clock.
	StateHeld State = "held"
	// StateFenced: a number is held but the last renewal is overdue; the
	// generator refuses until a renewal succeeds.
	StateFenced State = "fenced"
	// StateClosed: the keeper stopped and released its number.
	StateClosed State = "closed"
	// StateFailed: the keeper's first claim was refused for a reason
	// retrying cannot fix (Keeper.Err: a schedule other than the fleet's,
	// a keyspace or high-water mark it cannot use); it claims nothing more
	// and its generator refuses. Close it, fix the configuration, start
	// again.
	StateFailed State = "failed"
)

// Status is a snapshot of a Keeper, for health checks, metrics and logs.
type Status struct {
	State   State  `json:"state"`
	Machine int    `json:"machine"` // -1 when none is held
	Region  int    `json:"region"`
	Holder  string `json:"holder"`
	// Layout names the layout the number is for (a schedule's step).
	Layout string `json:"layout,omitempty"`
	Token  uint64 `json:"token,omitempty"`
	// MarkMs is the reserved mark in the store; the generator issues below
	// MarkMs minus the margin.
	MarkMs int64 `json:"mark_ms,omitempty"`
	// LastRenewal is the wall time the last acknowledged renewal was sent.
	LastRenewal time.Time `json:"last_renewal,omitzero"`
	// Claims, Losses and RenewFailures count events since the keeper started.
	Claims        uint64 `json:"claims"`
	Losses        uint64 `json:"losses"`
	RenewFailures uint64 `json:"renew_failures"`
	// LastError is the last claim or renewal error, if any.
	LastError string `json:"last_error,omitempty"`
	// Next, while a cutover of the schedule approaches (within the
	// keeper's Lead), is the state of the number claimed for the layout
	// that takes over; nil otherwise.
	Next *Status `json:"next,omitempty"`
}
