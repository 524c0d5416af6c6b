//go:build !snowfence_revert_nonce

package revert

// Nonce is false: the fix is in force (see the package doc).
const Nonce = false
