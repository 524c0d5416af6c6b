package lease

import (
	"time"

	"golang.org/x/sys/unix"
)

// Boottime reads CLOCK_BOOTTIME, which keeps counting while the host is
// suspended (CLOCK_MONOTONIC does not), as time since boot. It costs a system
// call. It is the default KeeperConfig.Boottime with the system clock.
func Boottime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
