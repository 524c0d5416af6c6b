//go:build snowfence_revert_registry

package revert

// Registry is true: the fix is undone (see the package doc).
const Registry = true
