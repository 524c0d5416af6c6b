//go:build !snowfence_revert_jump

package revert

// Jump is false: the fix is in force (see the package doc).
const Jump = false
