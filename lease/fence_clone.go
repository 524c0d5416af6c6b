package lease

import (
	"slices"

	"github.com/snowfence/snowfence/internal/revert"
)

// accepts reports whether stored, the renewal value a record of l's claim
// holds, is one this process wrote or sent for it: another value is a
// second process renewing the same claim (a clone), which the check keeps
// from renewing beside this one. Load-bearing for uniqueness: change only
// with scripts/prove-search clone.
func (r *Renewals) accepts(l *Lease, stored string) bool {
	return revert.Clone || slices.Contains(r.Accepted(l), stored)
}

// otherRenewal reports whether rec, the record of l's number read back,
// carries another renewal value than l's: this extension's own, whose
// reply was lost, or a clone's, which only the store (asked again) can
// tell apart. Load-bearing for uniqueness: change only with
// scripts/prove-search clone.
func otherRenewal(rec Record, l *Lease) bool {
	return !revert.Clone && rec.Renewal != l.Renewal
}
