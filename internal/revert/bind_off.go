//go:build !snowfence_revert_bind

package revert

// Bind is false: the fix is in force (see the package doc).
const Bind = false
