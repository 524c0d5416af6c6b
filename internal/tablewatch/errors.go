package tablewatch

import (
	"fmt"
	"time"

	"github.com/snowfence/snowfence/lease"
)

// Seen is the error of a call whose answer showed that table went back in
// time, as what describes (After's or WentBack's description):
// lease.ErrRestored, with what to do.
func Seen(table, what string) error {
	return fmt.Errorf("%w: table %s: %s — a restore of a copy of the table's data, or rows written back or deleted by hand. "+
		"Marks the table acknowledged may be lost: stop issuing on every lease claimed before, and raise every mark past "+
		"the last ID issued before letting other holders claim (RaiseMarks; docs/runbook.md)", lease.ErrRestored, table, what)
}

// Fenced is the error of Extend for lease l of table, fenced because a
// restore (what, noticed at at) was noticed after it was claimed:
// lease.ErrRestored, with what to do.
func Fenced(table string, l *lease.Lease, what string, at time.Time) error {
	return fmt.Errorf("%w: machine %d region %d epoch %d of table %s was claimed before the store noticed, at %s, that the table "+
		"went back in time (%s): stop issuing on it and claim again (claims start after the restore window), and raise "+
		"every mark past the last ID issued before letting other holders back (RaiseMarks; docs/runbook.md)",
		lease.ErrRestored, l.Machine, l.Region, l.Token, table, at.UTC().Format(time.RFC3339), what)
}
