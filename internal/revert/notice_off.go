//go:build !snowfence_revert_notice

package revert

// Notice is false: the fix is in force (see the package doc).
const Notice = false
