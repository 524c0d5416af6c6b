//go:build snowfence_revert_jump

package revert

// Jump is true: the fix is undone (see the package doc).
const Jump = true
