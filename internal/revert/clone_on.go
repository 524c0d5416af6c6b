//go:build snowfence_revert_clone

package revert

// Clone is true: the fix is undone (see the package doc).
const Clone = true
