//go:build !snowfence_revert_clone

package revert

// Clone is false: the fix is in force (see the package doc).
const Clone = false
