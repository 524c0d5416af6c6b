package snowfence

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Match them with errors.Is; several are wrapped in a typed
// error that carries the details (see ClockBackwardsError, FencedError,
// ParseError).
var (
	// ErrInvalidID reports text or a number that is not a valid ID.
	ErrInvalidID = errors.New("snowfence: invalid ID")
	// ErrInvalidLayout reports a layout or schedule that cannot be used.
	ErrInvalidLayout = errors.New("snowfence: invalid layout")
	// ErrInvalidConfig reports a Config that New cannot use.
	ErrInvalidConfig = errors.New("snowfence: invalid config")
	// ErrInvalidCount reports a batch size outside 1..MaxBatch.
	ErrInvalidCount = errors.New("snowfence: invalid batch count")
	// ErrClockBackwards reports a wall-clock step back larger than the
	// generator waits out. The generator refuses until its clock passes the
	// last timestamp it issued.
	ErrClockBackwards = errors.New("snowfence: clock moved backwards")
	// ErrFenced reports that the generator may not issue: it holds no lease,
	// its lease's high-water mark is reached, or its last renewal is older
	// than the self-fence window.
	ErrFenced = errors.New("snowfence: fenced")
	// ErrLayoutExhausted reports that the wall clock is past the last instant
	// the layout's timestamp bits can represent.
	ErrLayoutExhausted = errors.New("snowfence: layout exhausted")
	// ErrNoLayout reports that a scheduled layout is in force for which this
	// generator has no usable configuration (its machine or region does not
	// fit the layout's widths).
	ErrNoLayout = errors.New("snowfence: no usable layout")
	// ErrPlacement reports a machine range or region that a layout of the
	// schedule cannot hold (see Schedule.CheckPlacement and
	// PlacementError): refused at start, before any number is used.
	ErrPlacement = errors.New("snowfence: machine range or region does not fit the layout")
	// ErrClockUnsynchronized reports that the clock-sync policy is "require"
	// (the default) and the kernel says the clock is not synchronised, or
	// its maximum error is above the limit, or the wall clock jumped forward
	// and is not yet back in sync.
	ErrClockUnsynchronized = errors.New("snowfence: clock not synchronized")
	// ErrLeaseBound reports a second generator on a lease that feeds one
	// already (LeaseView.Bind, as a lease.Keeper's does): the first
	// generator's last tick and sequence are the only record of what was
	// issued on the number, so a second one would mint the same IDs. Give
	// each generator a keeper of its own, or share one generator (it is
	// safe for concurrent use).
	ErrLeaseBound = errors.New("snowfence: the lease already feeds a generator")
	// ErrClosed reports a call on a closed generator.
	ErrClosed = errors.New("snowfence: generator closed")
	// ErrInvalidUUID reports text or a database value that is not a UUID
	// in the form ParseUUID and UUID.Scan take.
	ErrInvalidUUID = errors.New("snowfence: invalid UUID")
	// ErrForeignUUID reports a well-formed UUID that is not the UUIDv8
	// form of a snowfence ID (Schedule.FromUUID): another version or
	// variant, check bits that do not match, or an embedded ID whose
	// timestamp disagrees with the UUID's.
	ErrForeignUUID = errors.New("snowfence: not the UUID form of a snowfence ID")
)

// ClockBackwardsError is returned when the wall clock stepped back by more than
// MaxBackwardWait. It matches ErrClockBackwards.
type ClockBackwardsError struct {
	// Step is how far the clock is behind the last issued timestamp.
	Step time.Duration
	// Last is the last issued timestamp; Now is the clock's reading.
	Last, Now time.Time
}

func (e *ClockBackwardsError) Error() string {
	return fmt.Sprintf("snowfence: clock moved backwards by %d ms (last issued %s, clock reads %s); refusing until the clock passes the last issued timestamp",
		e.Step.Milliseconds(), e.Last.UTC().Format(timeFormat), e.Now.UTC().Format(timeFormat))
}

// Unwrap returns ErrClockBackwards.
func (e *ClockBackwardsError) Unwrap() error { return ErrClockBackwards }

// FencedError says why a generator is fenced. It matches ErrFenced.
type FencedError struct {
	// Reason is a short machine-readable cause: "no-lease", "mark-reached",
	// "renewal-overdue", "not-started" or "lost".
	Reason string
	// Detail is a sentence for people.
	Detail string
}

func (e *FencedError) Error() string {
	return "snowfence: fenced (" + e.Reason + "): " + e.Detail
}

// Unwrap returns ErrFenced.
func (e *FencedError) Unwrap() error { return ErrFenced }

// ParseError is returned by ParseID and ID.UnmarshalText. It matches
// ErrInvalidID.
type ParseError struct {
	// Input is the rejected text, cut to 40 bytes.
	Input string
	// Reason says what is wrong with it.
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("snowfence: invalid ID %q: %s", e.Input, e.Reason)
}

// Unwrap returns ErrInvalidID.
func (e *ParseError) Unwrap() error { return ErrInvalidID }

// timeFormat is RFC 3339 with milliseconds, the form used in every output.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"
