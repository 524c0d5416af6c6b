//go:build snowfence_revert_isolation

package revert

// Isolation is true: the fix is undone (see the package doc).
const Isolation = true
