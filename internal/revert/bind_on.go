//go:build snowfence_revert_bind

package revert

// Bind is true: the fix is undone (see the package doc).
const Bind = true
