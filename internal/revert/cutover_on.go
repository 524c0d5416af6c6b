//go:build snowfence_revert_cutover

package revert

// Cutover is true: the fix is undone (see the package doc).
const Cutover = true
