//go:build snowfence_revert_region

package revert

// Region is true: the fix is undone (see the package doc).
const Region = true
