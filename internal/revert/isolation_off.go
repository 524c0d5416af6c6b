//go:build !snowfence_revert_isolation

package revert

// Isolation is false: the fix is in force (see the package doc).
const Isolation = false
