//go:build snowfence_revert_window

package revert

// Window is true: the fix is undone (see the package doc).
const Window = true
