//go:build snowfence_revert_restore

package revert

// Restore is true: the fix is undone (see the package doc).
const Restore = true
