//go:build snowfence_revert_schedule

package revert

// Schedule is true: the fix is undone (see the package doc).
const Schedule = true
