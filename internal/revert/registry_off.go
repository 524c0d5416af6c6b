//go:build !snowfence_revert_registry

package revert

// Registry is false: the fix is in force (see the package doc).
const Registry = false
