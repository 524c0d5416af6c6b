package snowfence

import (
	"fmt"
	"time"
)

// A ClockPolicy decides what an unsynchronised clock does to a generator.
// Clock sync only serves ordering across machines; uniqueness never rests on
// it, so the default is ClockWarn.
type ClockPolicy string

const (
	// ClockRequire refuses to issue while the kernel reports the clock
	// unsynchronised or its maximum error above the limit.
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
}

// String formats the status for people.
func (s ClockStatus) String() string {
	sync := "synchronized"
	if !s.Synchronized {
		sync = "NOT synchronized"
	}
	return fmt.Sprintf("%s, estimated error %s, maximum error %s, offset %s", sync, s.EstimatedError, s.MaxError, s.Offset)
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
