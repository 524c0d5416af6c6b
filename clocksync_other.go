//go:build !linux

package snowfence

import "errors"

// KernelClockStatus is only available on Linux; elsewhere it reports an
// error, and a generator with ClockRequire (the default) refuses: set
// ClockWarn or ClockOff there.
func KernelClockStatus() (ClockStatus, error) {
	return ClockStatus{}, errors.New("snowfence: clock status needs adjtimex, which only Linux has")
}
