package k8sstore

import (
	"slices"

	"github.com/snowfence/snowfence/internal/revert"
)

// ownRenewal reports whether stored, the renewal value a record of a
// lease's claim holds, is one this Store value wrote for the lease (own:
// lease.Renewals.Own, its earlier values too), so that the lease's release
// may write the record free: another value is a second process renewing
// the same claim (a clone), whose mark the release must leave. Extend's
// compare is lease.Renewals.Check (lease/fence_clone.go).
// Load-bearing for uniqueness: change only with scripts/prove-search clone.
func ownRenewal(own []string, stored string) bool {
	return revert.Clone || slices.Contains(own, stored)
}
