package snowfence

import (
	"fmt"
	"time"
)

// DefaultClockJumpSettle is Config.ClockJumpSettle's zero value: two of a
// time daemon's shortest default polls (chrony's and ntpd's minpoll, 64 s).
const DefaultClockJumpSettle = 2 * time.Minute

// clockJump is a forward jump of the wall clock (ahead of the monotonic
// clock by more than Config.ForwardJumpThreshold between two looks at the
// clocks) that is not yet back in sync. Under ClockRequire the generator
// refuses while one is pending.
//
// Back in sync means either of:
//
//   - the jump undone: the wall clock reads again within
//     ForwardJumpThreshold of where the monotonic clock puts it, measured
//     from the last reading before the jump (someone stepped it back);
//   - the kernel vouches for the new time: a reading of its clock state
//     taken at least Config.ClockJumpSettle after the jump (on the
//     monotonic clock) reports the clock synchronised and its maximum
//     error within Config.MaxClockError. Linux marks the clock
//     unsynchronised (STA_UNSYNC, maximum error 16 s) whenever it is set,
//     so a step through the kernel stays refused until the time daemon has
//     disciplined the clock again; the settle period gives the daemon its
//     polls to notice a step it did not make. A jump the kernel had no part
//     in (a host suspend, a hypervisor's catch-up, a process-level clock
//     offset) ends there too: nothing on the host can say more.
//
// A second jump while one is pending restarts the settle period and keeps
// the first one's base.
type clockJump struct {
	pending bool
	baseMs  int64         // wall − monotonic (ms) before the jump
	atMono  time.Duration // monotonic reading where the jump was seen
	atWall  int64         // wall reading there (Unix ms)
	sizeMs  int64         // how far the wall clock ran ahead of baseMs
}

// offsetMs is the wall clock's lead on the monotonic one at r, in ms.
func offsetMs(r Reading) int64 { return r.WallMs - int64(r.Mono/time.Millisecond) }

// startJump records a forward jump seen at r, the last reading before it
// having been prev.
func (g *Generator) startJump(prev, r Reading) {
	if !g.jump.pending {
		g.jump.baseMs = offsetMs(prev)
	}
	g.jump.pending, g.jump.atMono, g.jump.atWall = true, r.Mono, r.WallMs
	g.jump.sizeMs = offsetMs(r) - g.jump.baseMs
}

// endJump ends a pending jump that is back in sync at r (see clockJump),
// with the kernel's clock state as last read.
func (g *Generator) endJump(r Reading) {
	if !g.jump.pending {
		return
	}
	if offsetMs(r)-g.jump.baseMs <= g.fwdJumpMs {
		g.jump.pending = false
		g.log.Info("wall clock back in sync: the forward jump was undone", "clock", time.UnixMilli(r.WallMs).UTC().Format(timeFormat))
		return
	}
	if g.statusErr == nil && g.statusReadAt-g.jump.atMono >= g.clockJumpSettle {
		if ok, _ := g.status.withinLimit(g.maxClockError); ok {
			g.jump.pending = false
			g.log.Info("wall clock back in sync: the kernel reports it synchronized since the forward jump", "clock_state", g.status.String())
		}
	}
}

// why says why a pending jump refuses, and what ends it.
func (j clockJump) why(settle time.Duration) string {
	return fmt.Sprintf("the wall clock jumped %d ms ahead of the monotonic clock at %s; issuing resumes when it is back in sync: the jump undone, "+
		"or the kernel reporting the clock synchronized within the error bound %s or more after the jump (check the time daemon: chronyc tracking)",
		j.sizeMs, time.UnixMilli(j.atWall).UTC().Format(timeFormat), settle)
}
