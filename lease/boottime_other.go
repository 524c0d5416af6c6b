//go:build !linux

package lease

import "time"

// Boottime is zero outside Linux, which has no CLOCK_BOOTTIME: the watchdog
// then never fires, and the generator's monotonic check plus the wall-clock
// mark stand alone.
func Boottime() time.Duration { return 0 }
