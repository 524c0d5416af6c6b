package registry

import (
	"errors"
	"time"

	"github.com/snowfence/snowfence"
)

// What package lease and the registry share lives here, below both, so
// that there is one of each: lease.ErrInvalid is ErrInvalid, and
// lease.FormatMs and lease.CanonicalSchedule call these.

// ErrInvalid: a request outside the limits (a region name or number, a
// registry body, a copy that is not the registry's). It is the one
// sentinel lease.ErrInvalid names too, so errors.Is matches it through
// either name.
var ErrInvalid = errors.New("lease: invalid request")

// FormatMs formats a wall-clock reading in Unix ms as UTC with
// milliseconds ("2026-11-29T09:00:00.000Z"), as stores and keepers write
// marks and expiries in their logs and errors.
func FormatMs(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// CanonicalSchedule returns the textual form of a layout schedule that
// stores and the registry compare: the schedule parsed and formatted
// again, "v1" for the empty string.
func CanonicalSchedule(text string) (string, error) {
	s, err := snowfence.ParseSchedule(text)
	if err != nil {
		return "", err
	}
	return s.String(), nil
}
