package lease

import "github.com/snowfence/snowfence/lease/registry"

// FormatMs formats a wall-clock reading in Unix ms as UTC with
// milliseconds ("2026-11-29T09:00:00.000Z"), as stores and keepers write
// marks and expiries in their logs and errors (registry.FormatMs).
func FormatMs(ms int64) string { return registry.FormatMs(ms) }
