package snowfence

import "time"

// Limits are the thresholds a generator holds its clock and its layout to,
// with Config's defaults applied: what Health's refusals and warnings are
// measured against. Monitoring reads them (the server exports them on
// /metrics) so that alert rules compare with the generator's own numbers
// instead of copies that drift. They do not change after New.
type Limits struct {
	// ClockPolicy is the clock policy in force; never empty.
	ClockPolicy ClockPolicy
	// MaxClockError is the kernel's maximum clock error the policy
	// tolerates: above it ClockRequire refuses and ClockWarn warns. ClockOff
	// reads no clock state, so nothing is compared with it.
	MaxClockError time.Duration
	// TimestampsEnd is the first instant the schedule's timestamp cannot
	// hold: its epoch plus 2^TimeBits units. Every layout of one schedule
	// shares it; from it on the generator refuses with ErrLayoutExhausted.
	TimestampsEnd time.Time
	// ExhaustionWarning is how long before the timestamp runs out Health
	// starts warning (Config.ExhaustionWarning).
	ExhaustionWarning time.Duration
}

// Limits returns the generator's thresholds. It takes no lock: they are
// fixed by New.
func (g *Generator) Limits() Limits {
	return Limits{
		ClockPolicy:       g.policy,
		MaxClockError:     g.maxClockError,
		TimestampsEnd:     time.UnixMilli(g.epochMs + (g.maxTick+1)*g.unitMs).UTC(),
		ExhaustionWarning: g.exhaustWarn,
	}
}
