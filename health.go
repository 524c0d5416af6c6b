package snowfence

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Health says whether the generator would issue now, and why not.
type Health struct {
	// Issuing is true when a call now would succeed (perhaps after a wait).
	Issuing bool `json:"issuing"`
	// Reason is empty while issuing, else one of "fenced", "clock-backwards",
	// "clock-unsynchronized", "layout", "closed".
	Reason string `json:"reason,omitempty"`
	// Detail is the refusal's message.
	Detail string `json:"detail,omitempty"`
	// Err is the refusal itself, for errors.Is and errors.As.
	Err error `json:"-"`
	// Warnings lists conditions that do not stop issuing.
	Warnings []string `json:"warnings,omitempty"`
	// Machine and Region are the numbers in use, -1 with no lease.
	Machine int `json:"machine"`
	Region  int `json:"region"`
	// Layout names the layout in force.
	Layout string `json:"layout,omitempty"`
	// HasFence is false with no lease, and with a LeaseView that sets no
	// mark (Static).
	HasFence bool `json:"has_fence"`
	// UntilFence is the wall time left before the lease's mark; zero or
	// negative when reached, zero without a fence.
	UntilFence time.Duration `json:"until_fence"`
	// UntilStart is the time left before the lease's first grant may
	// issue, while refused for it (fenced, not-started: a claim's notice
	// window, or a start above the previous holder's mark); zero
	// otherwise. The fence is not what such a holder waits for.
	UntilStart time.Duration `json:"until_start"`
	// Clock is the last clock-sync and leap-second state read (zero with
	// ClockOff).
	Clock ClockStatus `json:"clock"`
}

// Health checks the generator's state against the clock and lease without
// issuing anything. A clock step back is reported until the clock passes the
// last issued timestamp.
func (g *Generator) Health() Health {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := Health{Machine: -1, Region: -1}
	r := g.clock.Now()
	if g.closed {
		h.Reason, h.Detail, h.Err = "closed", ErrClosed.Error(), ErrClosed
		return h
	}
	g.observe(r)
	_, _, _, err := g.check(r)
	if g.grant != nil {
		h.Machine, h.Region, h.Layout = g.grant.Machine, g.grant.Region, g.stepLayout
		if g.grant.LimitMs != math.MaxInt64 {
			h.HasFence = true
			h.UntilFence = time.Duration(g.epochMs+g.limitTick*g.unitMs-r.WallMs) * time.Millisecond
		}
	}
	h.Issuing = err == nil
	if err != nil {
		h.Reason, h.Detail, h.Err = g.why, err.Error(), err
	}
	if fe := (*FencedError)(nil); g.grant != nil && errors.As(err, &fe) && fe.Reason == "not-started" {
		// The later of the two starts the check compares: the
		// monotonic one and the wall-clock one.
		until := g.grant.StartMono - r.Mono
		if w := time.Duration(g.epochMs+g.startTick*g.unitMs-r.WallMs) * time.Millisecond; w > until {
			until = w
		}
		h.UntilStart = max(until, 0)
	}
	h.Clock = g.status
	if g.policy == ClockWarn && g.statusRead {
		if g.statusErr != nil {
			h.Warnings = append(h.Warnings, "clock state unreadable: "+g.statusErr.Error())
		} else if ok, why := g.status.withinLimit(g.maxClockError); !ok {
			h.Warnings = append(h.Warnings, why)
		}
	}
	if g.policy == ClockWarn && g.jump.pending {
		h.Warnings = append(h.Warnings, g.jump.why(g.clockJumpSettle))
	}
	if g.policy != ClockOff && g.statusRead && g.statusErr == nil {
		if w := g.status.Leap.warning(); w != "" {
			h.Warnings = append(h.Warnings, w)
		}
	}
	if g.lastJumpWallMs != 0 && r.WallMs-g.lastJumpWallMs < 10*60*1000 {
		h.Warnings = append(h.Warnings, fmt.Sprintf("wall clock jumped forward at %s", time.UnixMilli(g.lastJumpWallMs).UTC().Format(timeFormat)))
	}
	if last := g.schedule.steps[0].Layout.LastInstant(); time.UnixMilli(r.WallMs).Add(g.exhaustWarn).After(last) {
		h.Warnings = append(h.Warnings, "the layout's timestamp runs out at "+last.Format(timeFormat)+"; plan the move to a new epoch")
	}
	return h
}
