package lease

import (
	"errors"

	"github.com/snowfence/snowfence/internal/revert"
)

// rereadRestored reports whether err, from the re-read of a record after
// an extension of unknown outcome, says the store saw in that record that
// it went back in time (the table stores compare every read with the rows
// they saw): the lease is then lost as a restore, which keeps it apart from
// the claimer the restored rows let in. Load-bearing for uniqueness: change
// only with scripts/prove-search tablerestore.
func rereadRestored(err error) bool {
	return err != nil && errors.Is(err, ErrRestored) && !revert.TableRestore
}
