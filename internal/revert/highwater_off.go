//go:build !snowfence_revert_highwater

package revert

// HighWater is false: the fix is in force (see the package doc).
const HighWater = false
