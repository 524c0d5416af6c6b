package lease

import (
	"reflect"

	"github.com/snowfence/snowfence"
)

// defaultClock gives c the system clock when it has none, and with the
// system clock — given or defaulted — the CLOCK_BOOTTIME watchdog, which
// sees a host suspend that stops the monotonic clock the generator checks
// (with a clock of the caller's own kind, the generator's check of its
// readings is all, unless c.Boottime is set).
func (c *KeeperConfig) defaultClock() {
	if c.Clock == nil {
		c.Clock = snowfence.SystemClock()
	}
	if c.Boottime == nil && isSystemClock(c.Clock) {
		c.Boottime = Boottime
	}
}

// isSystemClock reports whether clk is a snowfence.SystemClock value.
func isSystemClock(clk snowfence.Clock) bool {
	return reflect.TypeOf(clk) == reflect.TypeOf(snowfence.SystemClock())
}
