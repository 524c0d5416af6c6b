//go:build !snowfence_revert_window

package revert

// Window is false: the fix is in force (see the package doc).
const Window = false
