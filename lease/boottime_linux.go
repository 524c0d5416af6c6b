package lease

import (
	"time"

	"golang.org/x/sys/unix"
)

// boottime reads CLOCK_BOOTTIME, which keeps counting while the host is
// suspended (CLOCK_MONOTONIC does not). It costs a system call.
func boottime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
