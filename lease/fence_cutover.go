package lease

import (
	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/revert"
)

// boundToLayout bounds a grant's start and limit to the hold's layout
// window (fromMs to untilMs): IDs on a number are for the layout it was
// claimed for only, which keeps them apart from the IDs another layout's
// holder mints with the same bits. Load-bearing for uniqueness: change only
// with scripts/prove-search cutover.
func (h *hold) boundToLayout(start, limit int64) (int64, int64) {
	if !revert.Cutover {
		start, limit = max(start, h.fromMs), min(limit, h.untilMs)
	}
	return start, limit
}

// pastCutover reports whether the clock (wallMs) reached the end of the
// hold's layout, when the hold retires and releases its number: nothing is
// issued on it after the cutover. Load-bearing for uniqueness: change only
// with scripts/prove-search cutover.
func (h *hold) pastCutover(wallMs int64) bool {
	return wallMs >= h.untilMs && !revert.Cutover
}

// oldLayoutGrant is nil, the fix in force: with no number for the layout
// of h, nothing is issued; the old layout's number never goes on past its
// cutover, where its IDs could equal those of the new layout's holders.
// (Reverted, it is the grant of the hold before h.) Load-bearing for
// uniqueness: change only with scripts/prove-search cutover.
func (k *Keeper) oldLayoutGrant(h *hold) *snowfence.Grant {
	if revert.Cutover && h != k.holds[0] {
		// The old behaviour: with no number for the new layout, go on
		// issuing on the old one.
		for _, p := range k.holds {
			if p.index == h.index-1 {
				if g := p.grant.Load(); g != nil {
					return g
				}
			}
		}
	}
	return nil
}
