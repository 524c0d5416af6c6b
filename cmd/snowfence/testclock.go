package main

import (
	"net/http"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/offsetclock"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/node"
)

// testClockPath is where --test-clock-offset serves the clock offset.
const testClockPath = "/test/clock-offset"

// useTestClock gives cfg's generator, and so its keeper (node.Start gives a
// keeper without a clock the generator's), a system clock whose wall
// reading carries a settable offset, keeping the keeper's CLOCK_BOOTTIME
// watchdog, which a keeper adds by itself only to the plain system clock.
func useTestClock(cfg *node.Config) *offsetclock.Clock {
	oc := offsetclock.New(snowfence.SystemClock())
	cfg.Generator.Clock = oc
	cfg.Keeper.Boottime = lease.Boottime
	return oc
}

// withTestClock routes testClockPath to the offset's handler and every other
// path to next: the ID server knows nothing of it.
func withTestClock(next http.Handler, oc *offsetclock.Clock) http.Handler {
	clock := oc.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == testClockPath {
			clock.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
