//go:build !snowfence_revert_region

package revert

// Region is false: the fix is in force (see the package doc).
const Region = false
