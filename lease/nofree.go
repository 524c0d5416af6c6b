package lease

import (
	"fmt"
	"time"
)

// Ahead counts the free numbers a claim passed over because their marks
// were more than ClaimRequest.MaxAhead ahead of the claimer's clock (after
// raise-marks, or a restore's floor), and the lowest of those marks. Every
// store's Claim keeps one, so that its ErrNoFreeNumber says when such a
// number becomes claimable (NoFreeAdvice) rather than send the operator to
// widen a range whose every number carries a raised mark.
type Ahead struct {
	// N is how many numbers were passed over for their marks.
	N int
	// LowestMs is the lowest of their marks (Unix ms); 0 when none is
	// known (a number passed over at its claim, whose mark was not kept).
	LowestMs int64
}

// Add counts one number passed over for its mark markMs (0: not known).
func (a *Ahead) Add(markMs int64) {
	a.N++
	if markMs > 0 && (a.LowestMs == 0 || markMs < a.LowestMs) {
		a.LowestMs = markMs
	}
}

// NoFreeAdvice is the advice that ends a store's ErrNoFreeNumber for req:
// otherwise (the store's own words: widen the range, release or
// unquarantine numbers, wait) when no number was passed over for its mark.
// Else it says when the first of those numbers becomes claimable by this
// claimer (its mark less MaxAhead) and that widening the range helps only
// if it reaches numbers whose marks were not raised, then otherwise for
// the others numbers passed over (held, quarantined, ...), if any.
func NoFreeAdvice(req ClaimRequest, a Ahead, others int, otherwise string) string {
	if a.N == 0 {
		return otherwise
	}
	when := "as the claimer's clock nears their marks"
	if a.LowestMs > 0 {
		at := a.LowestMs - req.MaxAhead.Milliseconds()
		when = fmt.Sprintf("at %s (its mark %s less MaxAhead %s), in %s by the claimer's clock",
			FormatMs(at), FormatMs(a.LowestMs), req.MaxAhead, (time.Duration(max(at-req.NowMs, 0)) * time.Millisecond).Round(time.Second))
	}
	s := fmt.Sprintf("%d free number(s) have marks more than MaxAhead ahead of the claimer's clock (raised by leases raise-marks, "+
		"or by a restore): the first becomes claimable %s; wait for it (a keeper waits up to MaxWait for such a number) — "+
		"widening the range helps only if it reaches numbers whose marks were not raised", a.N, when)
	if others > 0 {
		s += "; for the others: " + otherwise
	}
	return s
}
