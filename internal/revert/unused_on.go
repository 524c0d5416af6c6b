//go:build snowfence_revert_unused

package revert

// Unused is true: the fix is undone (see the package doc).
const Unused = true
