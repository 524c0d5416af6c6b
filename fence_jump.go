package snowfence

import (
	"time"

	"github.com/snowfence/snowfence/internal/revert"
)

// clockJumped measures, at reading r, how far the wall clock has run ahead
// of the monotonic one since the renewal behind grant was sent, and reports
// whether that is more than jumpFenceMs (only for a grant with a
// self-fence). The self-fence measures, on the monotonic clock, how long
// ago the store last acknowledged this holder; the timestamps come from the
// wall clock. If the wall clock has run ahead of the monotonic one since
// that renewal was sent — a step, or a host suspend, which stops the
// monotonic clock — the self-fence undercounts, and a store restored
// meanwhile may have handed the number to a claimer whose notice window
// trusted it: refusing keeps this holder's IDs apart from that claimer's.
// Measured against the renewal's own readings, so it needs no history: a
// step before the first ID counts, small steps add up until the next
// renewal, and a renewal sent after the jump (which the store acknowledged,
// so it still knows the lease) starts afresh. Load-bearing for uniqueness:
// change only with scripts/prove-search jump.
func clockJumped(grant *Grant, r Reading) (driftMs int64, jumped bool) {
	if grant.SelfFence > 0 && !revert.Jump {
		driftMs = (r.WallMs - grant.RenewedWallMs) - int64((r.Mono-grant.RenewedAt)/time.Millisecond)
		return driftMs, driftMs > jumpFenceMs
	}
	return 0, false
}
