package lease

import "time"

// FormatMs formats a wall-clock reading in Unix ms as UTC with
// milliseconds ("2026-11-29T09:00:00.000Z"), as stores and keepers write
// marks and expiries in their logs and errors.
func FormatMs(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
