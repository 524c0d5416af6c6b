//go:build snowfence_revert_highwater

package revert

// HighWater is true: the fix is undone (see the package doc).
const HighWater = true
