package lease

import "github.com/snowfence/snowfence/internal/revert"

// boundAlready reports whether the keeper feeds a generator already
// (k.mu held): a second generator would not know the first one's last
// tick and sequence, and the two would mint the same IDs. Load-bearing for
// uniqueness: change only with scripts/prove-search bind.
func (k *Keeper) boundAlready() bool {
	return k.bound && !revert.Bind
}
