//go:build !snowfence_revert_k8srecord

package revert

// K8sRecord is false: the fix is in force (see the package doc).
const K8sRecord = false
