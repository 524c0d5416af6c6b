//go:build !snowfence_revert_zkchild

package revert

// ZKChild is false: the fix is in force (see the package doc).
const ZKChild = false
