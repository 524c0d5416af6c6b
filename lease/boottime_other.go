//go:build !linux

package lease

import "time"

// boottime has no CLOCK_BOOTTIME outside Linux; the watchdog is off there and
// the generator's monotonic check plus the wall-clock mark stand alone.
func boottime() time.Duration { return 0 }
