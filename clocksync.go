package snowfence

import (
	"fmt"
	"time"
)

// A ClockPolicy decides what an untrustworthy clock does to a generator:
// one the kernel reports unsynchronised or too far from its reference, or
// one whose wall clock jumped ahead of the monotonic clock. Uniqueness
// never rests on clock sync — only the order of IDs across hosts does —
// but a holder of a shared lease store mints IDs that are compared with
// other hosts' (their timestamps put rows in order), so the zero value is
// ClockRequire. A holder on one host alone (the embedded etcd: package
// node sets ClockWarn for it, and says so at start) may choose ClockWarn.
type ClockPolicy string

const (
	// ClockRequire refuses to issue (ErrClockUnsynchronized, reason
	// "clock-unsynchronized") while the kernel reports the clock
	// unsynchronised or its maximum error above the limit, and after a
	// forward jump of the wall clock until it is back in sync
	// (clockjump.go). It is what the empty ClockPolicy means.
	ClockRequire ClockPolicy = "require"
	// ClockWarn issues, and reports the state in Health.
	ClockWarn ClockPolicy = "warn"
	// ClockOff does not read the kernel's clock state.
	ClockOff ClockPolicy = "off"
)

// ParseClockPolicy reads "require", "warn" or "off".
func ParseClockPolicy(s string) (ClockPolicy, error) {
	switch p := ClockPolicy(s); p {
	case ClockRequire, ClockWarn, ClockOff:
		return p, nil
	}
	return "", fmt.Errorf("%w: clock policy %q: use require, warn or off", ErrInvalidConfig, s)
}

// ClockStatus is the kernel's view of clock synchronisation (adjtimex(2)).
type ClockStatus struct {
	// Synchronized is false when the kernel's STA_UNSYNC flag is set or its
	// state is TIME_ERROR: no NTP daemon is disciplining the clock.
	Synchronized bool `json:"synchronized"`
	// EstimatedError and MaxError are the kernel's estimate of the clock's
	// error and its upper bound, as maintained by the NTP daemon.
	EstimatedError time.Duration `json:"estimated_error"`
	MaxError       time.Duration `json:"max_error"`
	// Offset is the last offset the daemon handed the kernel.
	Offset time.Duration `json:"offset"`
	// Leap is the kernel's leap-second state (leap.go); empty when none
	// is announced.
	Leap LeapState `json:"leap,omitempty"`
}

// String formats the status for people.
func (s ClockStatus) String() string {
	sync := "synchronized"
	if !s.Synchronized {
		sync = "NOT synchronized"
	}
	leap := ""
	if s.Leap != LeapNone {
		leap = ", leap second " + string(s.Leap)
	}
	return fmt.Sprintf("%s, estimated error %s, maximum error %s, offset %s%s", sync, s.EstimatedError, s.MaxError, s.Offset, leap)
}

// withinLimit reports whether the status passes ClockRequire with the given
// maximum error, and why not.
func (s ClockStatus) withinLimit(limit time.Duration) (bool, string) {
	if !s.Synchronized {
		return false, "the kernel reports the clock unsynchronized (is chronyd or ntpd running?)"
	}
	if s.MaxError > limit {
		return false, fmt.Sprintf("the kernel's maximum clock error %s exceeds %s", s.MaxError, limit)
	}
	return true, ""
}

// checkClockSync applies the clock policy, reading the kernel state at most
// once a second: the kernel's synchronisation and error bound, then a
// forward jump not yet back in sync (clockjump.go).
func (g *Generator) checkClockSync(r Reading) error {
	if !g.statusRead || r.Mono-g.statusReadAt >= time.Second {
		g.status, g.statusErr = g.readStatus()
		g.statusReadAt, g.statusRead = r.Mono, true
	}
	g.endJump(r)
	if g.policy != ClockRequire {
		return nil
	}
	if g.statusErr != nil {
		return fmt.Errorf("%w: cannot read the clock state (%v); use clock policy warn or off where adjtimex is unavailable", ErrClockUnsynchronized, g.statusErr)
	}
	if ok, why := g.status.withinLimit(g.maxClockError); !ok {
		return fmt.Errorf("%w: %s", ErrClockUnsynchronized, why)
	}
	if g.jump.pending {
		return fmt.Errorf("%w: %s", ErrClockUnsynchronized, g.jump.why(g.clockJumpSettle))
	}
	return nil
}
