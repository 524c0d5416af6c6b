//go:build snowfence_revert_k8srecord

package revert

// K8sRecord is true: the fix is undone (see the package doc).
const K8sRecord = true
