package lease

import "github.com/snowfence/snowfence/internal/revert"

// The release mark's floor. Close records the end of the last ID issued as
// the mark of every number it releases, and the next holder of the number
// starts there: on a host whose clock is behind this one's by more than the
// store's notice window, a mark below an ID issued lets it mint that ID
// again. The owner tells Close that end (Generator.LastIssued, read after
// the generator was closed); one read too early — while other calls still
// minted — is below IDs issued. The keeper knows a bound of its own: the
// generator issues only at instants it asked GrantAt about, so no ID on a
// hold's numbers lies past the end of the tick of the latest such instant.
// Close releases at the later of the two, within what the lease reserved
// (releaseMark): an owner's mark that is too low costs nothing, one that is
// too high only holds the number back.

// handOut records that GrantAt was asked about the hold for wallMs, before
// it reads the grant: Close withdraws the grants, then reads the record, so
// every grant read before the withdrawal is counted. It is on the
// generator's path for every ID: one load, and a compare-and-swap when the
// millisecond moved on.
func (h *hold) handOut(wallMs int64) {
	for {
		was := h.handedOut.Load()
		if wallMs <= was || h.handedOut.CompareAndSwap(was, wallMs) {
			return
		}
	}
}

// issuedAtMost is the mark to release the hold's number with for the
// owner's lastIssued: the later of it and the end of the tick (in the
// hold's layout) of the latest instant GrantAt was asked about. A
// lastIssued that is not known (negative: UnknownIssued) stays so, and the
// whole reservation is kept. Load-bearing for uniqueness: change only with
// scripts/prove-search releasemark.
func (h *hold) issuedAtMost(lastIssued int64) int64 {
	w := h.handedOut.Load()
	if lastIssued < 0 || w == 0 || revert.ReleaseMark {
		return lastIssued
	}
	layout := h.k.cfg.Schedule.Steps()[h.index].Layout
	epoch, unit := layout.Epoch.UnixMilli(), max(layout.Unit.Milliseconds(), 1)
	if w < epoch {
		return lastIssued // before the layout's epoch: nothing is issued
	}
	return max(lastIssued, epoch+((w-epoch)/unit+1)*unit)
}

// issuedAtMost is the end of the last ID issued on any of the keeper's
// numbers as far as the owner's lastIssued and GrantAt's records tell
// (hold.issuedAtMost), for the HighWater; 0 when lastIssued is not known.
func (k *Keeper) issuedAtMost(lastIssued int64) int64 {
	if lastIssued < 0 {
		return 0
	}
	end := lastIssued
	for _, h := range k.holds {
		end = max(end, h.issuedAtMost(lastIssued))
	}
	return end
}
