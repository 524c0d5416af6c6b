//go:build snowfence_revert_zkchild

package revert

// ZKChild is true: the fix is undone (see the package doc).
const ZKChild = true
