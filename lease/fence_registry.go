package lease

import "github.com/snowfence/snowfence/internal/revert"

// checksRegistry reports that StartKeeper checks the region registry's
// rules (region known and in service, its home store, the registry's
// schedule) before it claims: a holder of an unknown region, or one on a
// store that is not its region's home, could hold the same number as
// another region's holder. Load-bearing for uniqueness: change only with
// scripts/prove-search registry.
func checksRegistry() bool {
	return !revert.Registry
}
