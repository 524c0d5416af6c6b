//go:build snowfence_revert_nonce

package revert

// Nonce is true: the fix is undone (see the package doc).
const Nonce = true
