//go:build !snowfence_revert_unused

package revert

// Unused is false: the fix is in force (see the package doc).
const Unused = false
