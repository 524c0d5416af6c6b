//go:build !snowfence_revert_schedule

package revert

// Schedule is false: the fix is in force (see the package doc).
const Schedule = false
