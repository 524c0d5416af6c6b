package lease

import (
	"reflect"

	"github.com/snowfence/snowfence"
)

// ShareClock gives a keeper and the generator that mints on its lease one
// clock, as the self-fence needs: the generator stops issuing when the
// keeper's last acknowledged renewal is older than SelfFence, and it
// compares monotonic readings of both. The clock is gc's, else kc's, else
// the system clock; with the system clock the keeper also watches
// CLOCK_BOOTTIME, unless kc.Boottime says otherwise (see defaultClock).
//
// A program that starts the keeper first need not call it: snowfence.New,
// given no clock, takes its Lease's (Keeper.Clock).
func ShareClock(kc *KeeperConfig, gc *snowfence.Config) {
	if gc.Clock != nil {
		kc.Clock = gc.Clock
	}
	kc.defaultClock()
	gc.Clock = kc.Clock
}

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
