//go:build !snowfence_revert_restore

package revert

// Restore is false: the fix is in force (see the package doc).
const Restore = false
