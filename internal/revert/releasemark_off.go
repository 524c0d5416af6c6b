//go:build !snowfence_revert_releasemark

package revert

// ReleaseMark is false: the fix is in force (see the package doc).
const ReleaseMark = false
