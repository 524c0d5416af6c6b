//go:build snowfence_revert_notice

package revert

// Notice is true: the fix is undone (see the package doc).
const Notice = true
