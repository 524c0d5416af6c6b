//go:build snowfence_revert_releasemark

package revert

// ReleaseMark is true: the fix is undone (see the package doc).
const ReleaseMark = true
