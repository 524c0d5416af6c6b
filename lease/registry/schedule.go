package registry

import (
	"fmt"
	"slices"
)

// The registry records the fleet's layout schedule (Registry.Schedule);
// package lease compares it with each store's fleet schedule record and
// with every holder's schedule (lease.CheckHolderSchedule), and changes
// it across every region (lease.ChangeFleetSchedule).

// WithSchedule returns r, one version on, with the fleet schedule text
// (canonicalised, CanonicalSchedule) recorded. ErrInvalid if text is not a
// schedule. A text equal to the recorded one is still a change (one
// version on): compare first when nothing should be written then.
func (r Registry) WithSchedule(text string) (Registry, error) {
	canon, err := CanonicalSchedule(text)
	if err != nil {
		return r, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return Registry{Version: r.Version + 1, Regions: slices.Clone(r.Regions), Copies: r.Copies, CopyIdentities: r.CopyIdentities, Schedule: canon}, nil
}
