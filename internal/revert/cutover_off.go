//go:build !snowfence_revert_cutover

package revert

// Cutover is false: the fix is in force (see the package doc).
const Cutover = false
